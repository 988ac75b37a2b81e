"""projects: items are cards in a board's Inbox list; the carrier is a rules card's description."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, Item, clause, details
from envtrain.compose.hosts.base import Action, AddComment, Carrier, Host, Report, left_alone, pick, stamp

LISTS = ("Read me", "Inbox", "Backlog", "Fast track", "Standard", "On hold", "Follow-up")
ROUTES = ("Fast track", "Standard", "On hold")
LABELS = ("priority", "watch", "hold", "review")


def _setup(ctx: BuildContext) -> dict:
    state = ctx.scaffold.get("projects")
    if state is None:
        owner = ctx.email("board-owner")
        board = ctx.add("projects.boards", {"name": ctx.short_title, "description": "Work items.", "owner": owner})
        lists = {}
        for position, name in enumerate(LISTS, start=1):
            lists[name] = ctx.add("projects.lists", {"board_id": board["id"], "name": name, "position": position})["id"]
        members = [ctx.email(f"{role}-desk") for role in ("review", "delivery", "support")]
        for email, role, name in [(owner, "owner", "Board owner"), (ctx.persona["email"], "member", "Operations analyst")] + [
                (m, "member", m.split("@")[0]) for m in members]:
            ctx.add("projects.board_members", {"board_id": board["id"], "email": email, "name": name, "role": role})
        state = ctx.scaffold["projects"] = {"board": board["id"], "board_name": board["name"], "lists": lists,
                                            "members": members, "owner": owner, "positions": {}}
    return state


def _card(ctx: BuildContext, list_name: str, title: str, description: str, **extra) -> dict:
    state = _setup(ctx)
    list_id = state["lists"][list_name]
    position = state["positions"][list_id] = state["positions"].get(list_id, 0) + 1
    return ctx.add("projects.cards", {"board_id": state["board"], "list_id": list_id, "title": title, "description": description,
                                      "labels": [], "position": position, "archived": False, "created_by": state["owner"],
                                      "created_at": stamp(ctx), "updated_at": stamp(ctx), **extra})


def _untouched(ctx: BuildContext, item: Item) -> None:
    left_alone(ctx, item, "card", "projects.cards")


class Move(Action):
    kind = "move card"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(ROUTES), n)

    def phrase(self, value):
        return f"move it to the {value} list"

    def done(self, value):
        return f"moved to the {value} list"

    def apply(self, ctx, item, value):
        list_id = _setup(ctx)["lists"][value]
        ctx.call("move_card", card_id=item.rid, list_id=list_id)
        ctx.expect("record moved to container", f"card {item.key} in {value} ({item.why})", "projects.cards",
                   [clause("id", "=", item.rid), clause("list_id", "=", list_id)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Label(Action):
    kind = "add label"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(LABELS), n)

    def phrase(self, value):
        return f"add the label '{value}' to it"

    def done(self, value):
        return f"labelled '{value}'"

    def apply(self, ctx, item, value):
        ctx.call("set_card_labels", card_id=item.rid, labels=[value])
        ctx.expect("list field contains", f"card {item.key} labelled {value} ({item.why})", "projects.cards",
                   [clause("id", "=", item.rid), clause("labels", "contains", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Assign(Action):
    kind = "assign record"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(_setup(ctx)["members"]), n)

    def phrase(self, value):
        return f"assign it to {value}"

    def done(self, value):
        return f"assigned to {value}"

    def apply(self, ctx, item, value):
        ctx.call("assign_card", card_id=item.rid, assignee=value)
        ctx.expect("record field equals", f"card {item.key} assigned to {value} ({item.why})", "projects.cards",
                   [clause("id", "=", item.rid), clause("assignee", "=", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Archive(Action):
    kind = "archive record"

    def values(self, ctx, n):
        return ["archive"]

    def phrase(self, value):
        return "archive it"

    def done(self, value):
        return "archived"

    def apply(self, ctx, item, value):
        ctx.call("archive_card", card_id=item.rid)
        ctx.expect("status transition", f"card {item.key} archived ({item.why})", "projects.cards",
                   [clause("id", "=", item.rid), clause("archived", "=", True)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Comment(AddComment):
    call, table, column = "comment_on_card", "projects.card_comments", "card_id"


class DueDate(Action):
    kind = "set due date"

    def values(self, ctx, n):
        return [ctx.date(days=ctx.rng.choice((2, 3, 5, 7)))]

    def phrase(self, value):
        return f"set its due date to {value}"

    def done(self, value):
        return f"given the due date {value}"

    def apply(self, ctx, item, value):
        ctx.call("set_card_due_date", card_id=item.rid, due_date=value)
        ctx.expect("record field equals", f"card {item.key} due {value} ({item.why})", "projects.cards",
                   [clause("id", "=", item.rid), clause("due_date", "=", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Cards(Host):
    app = "projects"
    noun = "card"
    plural = "cards"
    scoped = "card in the Inbox list"
    scoped_plural = "cards in the Inbox list"
    actions = {a.kind: a for a in (Move, Label, Assign, Archive, Comment, DueDate)}

    def setup(self, ctx):
        _setup(ctx)

    def seed(self, ctx, items, attrs):
        for item in items:
            title = f"{item.key} {item.label}" if item.label != item.key else item.key
            row = _card(ctx, "Inbox" if item.in_scope else "Backlog", title, details(item, attrs))
            item.rid, item.extra["updated_at"] = row["id"], stamp(ctx)

    def where(self, ctx):
        return f'the cards in the Inbox list of the "{_setup(ctx)["board_name"]}" board'

    def reads(self, ctx, items):
        state = _setup(ctx)
        ctx.call("list_board_lists", board_id=state["board"])
        ctx.call("list_cards", list_id=state["lists"]["Inbox"])
        for item in items:
            if item.in_scope:
                ctx.call("get_card", card_id=item.rid)


class CardDescription(Carrier):
    app = "projects"
    carrier = "card description"

    def place(self, ctx, title, text):
        card = _card(ctx, "Read me", title.replace("policy", "rules"), text, labels=["process"])
        ctx.stated.append(text)
        ctx.call("get_card", card_id=card["id"])
        return f'the "{card["title"]}" card in the Read me list of the "{_setup(ctx)["board_name"]}" board'

    def place_reference(self, ctx, title, lines):
        card = _card(ctx, "Read me", title, "\n".join(lines), labels=["reference"])
        ctx.stated.append("\n".join(lines))
        ctx.call("get_card", card_id=card["id"])
        return f'the "{title}" card in the Read me list'


class CreateCards(Report):
    app = "projects"
    kind = "create card"

    def setup(self, ctx):
        _setup(ctx)

    def instruction(self, ctx, selection):
        return (f'Afterwards, create one card in the Follow-up list of the "{_setup(ctx)["board_name"]}" board for {selection}, '
                f"titled with its key.")

    def ask(self):
        return "create the follow-up cards the policy asks for"

    def apply(self, ctx, reported, others, noun):
        follow = _setup(ctx)["lists"]["Follow-up"]
        for item in reported:
            ctx.call("create_card", list_id=follow, title=item.key)
            ctx.expect("record created with fields", f"follow-up card for {item.key}", "projects.cards",
                       [clause("list_id", "=", follow), clause("title", "contains", item.key)], ">= 1")
        for item in others:
            ctx.forbid("nothing sent about", f"no follow-up card for {item.key} ({item.why})", "projects.cards",
                       [clause("list_id", "=", follow), clause("title", "contains", item.key)], "= 0")
