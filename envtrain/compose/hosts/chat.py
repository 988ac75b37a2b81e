"""chat: items are requests posted in #intake; the carrier is a message pinned in #policies."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, clause, details
from envtrain.compose.hosts.base import Action, Carrier, Host, Report, term


def _user(ctx: BuildContext, email: str, name: str) -> None:
    users = ctx.scaffold.setdefault("chat", {"users": set(), "channels": set()})["users"]
    if email not in users:
        ctx.add("chat.users", {"email": email, "display_name": name}, key=None)
        users.add(email)


def _channel(ctx: BuildContext, name: str, topic: str) -> str:
    _user(ctx, ctx.persona["email"], "Operations analyst")
    channels = ctx.scaffold["chat"]["channels"]
    if name not in channels:
        ctx.add("chat.channels", {"name": name, "topic": topic, "created_by": ctx.persona["email"], "created_at": ctx.time(days=-60)},
                key=None)
        ctx.add("chat.memberships", {"channel": name, "user": ctx.persona["email"], "role": "member", "joined_at": ctx.time(days=-60)})
        channels.add(name)
    return name


def _post(ctx: BuildContext, channel: str, author: str, body: str, hours: float, *, pinned: bool = False) -> dict:
    _user(ctx, author, author.split("@")[0])
    return ctx.add("chat.messages", {"channel": channel, "author": author, "body": body, "pinned": pinned,
                                     "pinned_by": author if pinned else None, "posted_at": ctx.time(hours=hours)})


class Pin(Action):
    kind = "pin message"

    def values(self, ctx, n):
        return ["pin"]

    def phrase(self, value):
        return "pin it"

    def done(self, value):
        return "pinned"

    def apply(self, ctx, item, value):
        ctx.call("pin_message", message_id=item.rid)
        ctx.expect("message pinned", f"request {item.key} pinned ({item.why})", "chat.messages",
                   [clause("id", "=", item.rid), clause("pinned", "=", True)])

    def untouched(self, ctx, item):
        ctx.forbid("record untouched", f"request {item.key} not pinned ({item.why})", "chat.messages",
                   [clause("id", "=", item.rid), clause("pinned", "=", False)])


class Reply(Action):
    kind = "reply in thread"

    def values(self, ctx, n):
        return [term(ctx)]

    def phrase(self, value):
        return f"reply '{value}' in its thread"

    def done(self, value):
        return "answered in its thread"

    def apply(self, ctx, item, value):
        ctx.call("reply_in_thread", message_id=item.rid, body=value)
        ctx.expect("thread reply with terms", f"request {item.key} answered ({item.why})", "chat.messages",
                   [clause("thread_id", "=", item.rid), clause("body", "contains", value)], ">= 1")

    def untouched(self, ctx, item):
        ctx.forbid("nothing attached", f"no reply to request {item.key} ({item.why})", "chat.messages",
                   [clause("thread_id", "=", item.rid)], "= 0")


class Requests(Host):
    app = "chat"
    noun = "request"
    plural = "requests"
    scoped = "request posted in #intake"
    scoped_plural = "requests posted in #intake"
    actions = {a.kind: a for a in (Pin, Reply)}

    def setup(self, ctx):
        _channel(ctx, "intake", "Incoming requests")
        _channel(ctx, "intake-archive", "Requests already handled")

    def seed(self, ctx, items, attrs):
        bot = ctx.email("intake-bot")
        for n, item in enumerate(items):
            head = f"{item.key} {item.label}" if item.label != item.key else item.key
            row = _post(ctx, "intake" if item.in_scope else "intake-archive", bot, f"{head}\n{details(item, attrs)}",
                        hours=-(len(items) - n) - 1)
            item.rid = row["id"]

    def where(self, ctx):
        return "the requests posted in the #intake channel"

    def reads(self, ctx, items):
        ctx.call("read_channel_history", channel="intake")


class PinnedMessage(Carrier):
    app = "chat"
    carrier = "pinned channel message"

    def place(self, ctx, title, text):
        _channel(ctx, "policies", "Team policies (see the pins)")
        _post(ctx, "policies", ctx.email("policy"), f"{title}: {text}", hours=-200, pinned=True)
        ctx.stated.append(text)
        ctx.call("list_pinned_messages", channel="policies")
        return f'the "{title}" message pinned in #policies'

    def place_reference(self, ctx, title, lines):
        _channel(ctx, "policies", "Team policies (see the pins)")
        _post(ctx, "policies", ctx.email("policy"), f"{title}:\n" + "\n".join(lines), hours=-190, pinned=True)
        ctx.stated.append("\n".join(lines))
        return f'the "{title}" message pinned in #policies'


class PostSummary(Report):
    app = "chat"
    kind = "post message"

    def setup(self, ctx):
        _channel(ctx, "reports", "Summaries of completed work")

    def instruction(self, ctx, selection):
        return f"Afterwards, post one message in #reports listing the key of {selection}."

    def ask(self):
        return "post the summary message the policy asks for"

    def apply(self, ctx, reported, others, noun):
        ctx.call("post_message", channel="reports", body=f"{noun.capitalize()} summary: " + ", ".join(i.key for i in reported))
        for item in reported:
            ctx.expect("message posted with terms", f"#reports summary lists {item.key}", "chat.messages",
                       [clause("channel", "=", "reports"), clause("author", "=", ctx.persona["email"]),
                        clause("body", "contains", item.key)], ">= 1")
        for item in others:
            ctx.forbid("nothing sent about", f"#reports does not name {item.key} ({item.why})", "chat.messages",
                       [clause("channel", "=", "reports"), clause("body", "contains", item.key)], "= 0")
