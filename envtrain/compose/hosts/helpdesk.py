"""helpdesk: items are open tickets (their attributes in the body); the carrier is an internal note."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, Item, clause, details
from envtrain.compose.hosts.base import Action, AddComment, Carrier, Host, left_alone, pick, stamp

TEAMS = ("tier2", "billing", "security")


def _setup(ctx: BuildContext) -> dict:
    state = ctx.scaffold.get("helpdesk")
    if state is None:
        state = ctx.scaffold["helpdesk"] = {"desks": {}}
        ctx.add("helpdesk.agents", {"email": ctx.persona["email"], "name": "Operations desk", "team": "tier1"}, key=None)
        for team in TEAMS:
            email = ctx.email(f"{team}-desk")
            ctx.add("helpdesk.agents", {"email": email, "name": f"{team} desk", "team": team}, key=None)
            state["desks"][team] = email
    return state


class Escalate(Action):
    kind = "escalate ticket"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(TEAMS), n)

    def phrase(self, value):
        return f"escalate it to the {value} team"

    def done(self, value):
        return f"escalated to the {value} team"

    def apply(self, ctx, item, value):
        ctx.call("escalate_ticket", ticket_id=item.rid, team=value)
        ctx.expect("record field equals", f"ticket {item.key} escalated to {value} ({item.why})", "helpdesk.tickets",
                   [clause("id", "=", item.rid), clause("status", "=", "escalated"), clause("escalated_to", "=", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class SetPriority(Action):
    kind = "update record field"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, ["urgent", "high", "low"], n)

    def phrase(self, value):
        return f"set its priority to {value}"

    def done(self, value):
        return f"set to priority {value}"

    def apply(self, ctx, item, value):
        ctx.call("set_priority", ticket_id=item.rid, priority=value)
        ctx.expect("record field equals", f"ticket {item.key} priority {value} ({item.why})", "helpdesk.tickets",
                   [clause("id", "=", item.rid), clause("priority", "=", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Assign(Action):
    kind = "assign record"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(_setup(ctx)["desks"].values()), n)

    def phrase(self, value):
        return f"assign it to {value}"

    def done(self, value):
        return f"assigned to {value}"

    def apply(self, ctx, item, value):
        ctx.call("assign_ticket", ticket_id=item.rid, assignee=value)
        ctx.expect("record field equals", f"ticket {item.key} assigned to {value} ({item.why})", "helpdesk.tickets",
                   [clause("id", "=", item.rid), clause("assignee", "=", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Comment(AddComment):
    call, table, column = "add_comment", "helpdesk.comments", "ticket_id"
    flags, qualifier = {"internal": True}, "internal "

    def phrase(self, value):
        return f"add the internal comment '{value}' to it"


def _untouched(ctx: BuildContext, item: Item) -> None:
    # every ticket write sets updated_at; set_priority works on resolved tickets too, so this can break
    left_alone(ctx, item, "ticket", "helpdesk.tickets")


class Tickets(Host):
    app = "helpdesk"
    noun = "ticket"
    plural = "tickets"
    scoped = "open ticket"
    scoped_plural = "open tickets"
    actions = {a.kind: a for a in (Escalate, SetPriority, Assign, Comment)}

    def setup(self, ctx):
        _setup(ctx)

    def seed(self, ctx, items, attrs):
        for item in items:
            row = ctx.add("helpdesk.tickets", {
                "subject": f"{item.key}: {item.label}" if item.label != item.key else item.key,
                "body": details(item, attrs),
                "customer": ctx.email(item.key.lower()),
                "priority": "normal",
                "status": "open" if item.in_scope else "resolved",
                "created_at": stamp(ctx), "updated_at": stamp(ctx), "tags": [],
            })
            item.rid, item.extra["updated_at"] = row["id"], stamp(ctx)

    def where(self, ctx):
        return "the open tickets in the helpdesk queue"

    def reads(self, ctx, items):
        ctx.call("list_tickets", status="open")
        for item in items:
            if item.in_scope:
                ctx.call("get_ticket", ticket_id=item.rid)


class NoteField(Carrier):
    app = "helpdesk"
    carrier = "note field"

    def _ticket(self, ctx: BuildContext, title: str, text: str) -> int:
        _setup(ctx)
        ticket = ctx.add("helpdesk.tickets", {
            "subject": title, "body": "Process ticket: the rules are in the internal note.", "customer": ctx.email("policy"),
            "priority": "low", "status": "pending", "created_at": ctx.time(days=-30), "updated_at": ctx.time(days=-30), "tags": [],
        })
        ctx.add("helpdesk.comments", {"ticket_id": ticket["id"], "author": ctx.email("policy"), "body": text,
                                      "internal": True, "created_at": ctx.time(days=-30)})
        ctx.stated.append(text)
        return ticket["id"]

    def place(self, ctx, title, text):
        tid = self._ticket(ctx, title, text)
        ctx.call("get_ticket", ticket_id=tid)
        ctx.call("list_comments", ticket_id=tid)
        return f'the internal note on helpdesk ticket {tid} ("{title}")'

    def place_reference(self, ctx, title, lines):
        tid = self._ticket(ctx, title, "\n".join(lines))
        ctx.call("list_comments", ticket_id=tid)
        return f"the reference list in the internal note on helpdesk ticket {tid}"
