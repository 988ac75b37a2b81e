"""calendar: items are confirmed events the persona organises (attributes in the description)."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, Item, clause, details
from envtrain.compose.hosts.base import Action, Host, left_alone, pick, stamp

ROOMS = ("north", "south", "east", "west")


def _setup(ctx: BuildContext) -> dict:
    state = ctx.scaffold.get("calendar")
    if state is None:
        cal = ctx.add("calendar.calendars", {"name": f"{ctx.short(40)} reviews", "owner": ctx.persona["email"]})
        ctx.add("calendar.editors", {"calendar_id": cal["id"], "email": ctx.persona["email"]})
        for room in ROOMS:
            ctx.add("calendar.rooms", {"id": room, "name": f"{room.capitalize()} room", "capacity": 12}, key=None)
        state = ctx.scaffold["calendar"] = {"calendar": cal["id"], "name": cal["name"]}
    return state


def _untouched(ctx: BuildContext, item: Item) -> None:
    left_alone(ctx, item, "event", "calendar.events")


class Cancel(Action):
    kind = "cancel event"

    def values(self, ctx, n):
        return ["cancel"]

    def phrase(self, value):
        return "cancel it"

    def done(self, value):
        return "cancelled"

    def apply(self, ctx, item, value):
        ctx.call("cancel_event", event_id=item.rid)
        ctx.expect("status transition", f"event {item.key} cancelled ({item.why})", "calendar.events",
                   [clause("id", "=", item.rid), clause("status", "=", "cancelled")])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Invite(Action):
    kind = "invite attendee"

    def values(self, ctx, n):
        return [ctx.email(ctx.rng.choice(("review", "audit", "finance-lead")))]

    def phrase(self, value):
        return f"invite {value} to it"

    def done(self, value):
        return f"given {value} as an attendee"

    def apply(self, ctx, item, value):
        ctx.call("invite_attendee", event_id=item.rid, email=value)
        ctx.expect("attendee invited", f"{value} invited to {item.key} ({item.why})", "calendar.attendees",
                   [clause("event_id", "=", item.rid), clause("email", "=", value)])

    def untouched(self, ctx, item):
        ctx.forbid("nothing attached", f"nobody invited to {item.key} ({item.why})", "calendar.attendees",
                   [clause("event_id", "=", item.rid)], "= 0")


class BookRoom(Action):
    kind = "book room"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(ROOMS), n)

    def phrase(self, value):
        return f"book the {value} room for it"

    def done(self, value):
        return f"booked into the {value} room"

    def apply(self, ctx, item, value):
        ctx.call("book_meeting_room", event_id=item.rid, room=value)
        ctx.expect("record field equals", f"event {item.key} in room {value} ({item.why})", "calendar.events",
                   [clause("id", "=", item.rid), clause("room", "=", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Events(Host):
    app = "calendar"
    noun = "event"
    plural = "events"
    scoped = "confirmed event"
    scoped_plural = "confirmed events"
    actions = {a.kind: a for a in (Cancel, Invite, BookRoom)}

    def setup(self, ctx):
        _setup(ctx)

    def seed(self, ctx, items, attrs):
        state = _setup(ctx)
        for n, item in enumerate(items, start=1):  # one a day: no two events compete for a room
            row = ctx.add("calendar.events", {
                "calendar_id": state["calendar"], "title": f"{item.key}: {item.label}" if item.label != item.key else item.key,
                "description": details(item, attrs), "start_time": ctx.time(days=n, hours=1), "end_time": ctx.time(days=n, hours=2),
                "organizer": ctx.persona["email"], "status": "confirmed" if item.in_scope else "tentative",
                "created_at": stamp(ctx), "updated_at": stamp(ctx),
            })
            item.rid, item.extra["updated_at"] = row["id"], stamp(ctx)
        state["days"] = len(items) + 1

    def where(self, ctx):
        return f'the confirmed events on the "{_setup(ctx)["name"]}" calendar'

    def reads(self, ctx, items):
        state = _setup(ctx)
        ctx.call("list_calendar_events", range_start=ctx.time(), range_end=ctx.time(days=state["days"] + 1),
                 calendar_id=state["calendar"])
        for item in items:
            if item.in_scope:
                ctx.call("get_calendar_event", event_id=item.rid)
