"""mail: items are messages in the requests folder; the carrier is a policy email in the inbox."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, clause, details
from envtrain.compose.hosts.base import Action, Carrier, Host, Report, pick, term

SYSTEM = ("inbox", "sent", "drafts", "archive", "spam", "trash")
ROUTES = ("priority", "standard", "hold")


def _setup(ctx: BuildContext) -> dict:
    state = ctx.scaffold.get("mail")
    if state is None:
        for name in SYSTEM:
            ctx.add("mail.folders", {"name": name, "kind": "system"}, key=None)
        for name in ("requests",) + ROUTES:
            ctx.add("mail.folders", {"name": name, "kind": "custom"}, key=None)
        state = ctx.scaffold["mail"] = {}
    return state


def _message(ctx: BuildContext, *, folder: str, sender: str, subject: str, body: str, hours: float, read: bool = False) -> dict:
    _setup(ctx)
    row = ctx.add("mail.messages", {"folder": folder, "sender": sender, "recipients": [ctx.persona["email"]], "subject": subject,
                                    "body": body, "is_read": read, "sensitivity": "normal", "sent_at": ctx.time(hours=hours)})
    row["thread_id"] = row["id"]
    return row


class Move(Action):
    kind = "move record"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(ROUTES), n)

    def phrase(self, value):
        return f"move it to the '{value}' folder"

    def done(self, value):
        return f"filed in the '{value}' folder"

    def apply(self, ctx, item, value):
        ctx.call("move_email", message_id=item.rid, folder=value)
        ctx.expect("record moved to container", f"message {item.key} in {value} ({item.why})", "mail.messages",
                   [clause("id", "=", item.rid), clause("folder", "=", value)])

    def untouched(self, ctx, item):
        ctx.forbid("record untouched", f"message {item.key} stays in {item.extra['folder']} ({item.why})", "mail.messages",
                   [clause("id", "=", item.rid), clause("folder", "=", item.extra["folder"])])


class Forward(Action):
    kind = "forward email"

    def values(self, ctx, n):
        return [ctx.email(ctx.rng.choice(("review", "audit", "escalations")))]

    def phrase(self, value):
        return f"forward it to {value}"

    def done(self, value):
        return f"forwarded to {value}"

    def apply(self, ctx, item, value):
        ctx.call("forward_email", message_id=item.rid, to=[value])
        ctx.expect("mail forwarded to", f"message {item.key} forwarded to {value} ({item.why})", "mail.messages",
                   [clause("forwarded_from", "=", item.rid), clause("recipients", "contains", value)], ">= 1")

    def untouched(self, ctx, item):
        ctx.forbid("nothing sent about", f"message {item.key} not forwarded ({item.why})", "mail.messages",
                   [clause("forwarded_from", "=", item.rid)], "= 0")


class Reply(Action):
    kind = "reply to email"

    def values(self, ctx, n):
        return [term(ctx)]

    def phrase(self, value):
        return f"reply to its sender with '{value}'"

    def done(self, value):
        return "answered"

    def apply(self, ctx, item, value):
        ctx.call("reply_to_email", message_id=item.rid, to=[item.extra["sender"]], body=value)
        ctx.expect("email reply with terms", f"message {item.key} answered ({item.why})", "mail.messages",
                   [clause("in_reply_to", "=", item.rid), clause("body", "contains", value)], ">= 1")

    def untouched(self, ctx, item):
        ctx.forbid("nothing sent about", f"message {item.key} not answered ({item.why})", "mail.messages",
                   [clause("in_reply_to", "=", item.rid)], "= 0")


class Messages(Host):
    app = "mail"
    noun = "message"
    plural = "messages"
    scoped = "message in the requests folder"
    scoped_plural = "messages in the requests folder"
    actions = {a.kind: a for a in (Move, Forward, Reply)}

    def setup(self, ctx):
        _setup(ctx)

    def seed(self, ctx, items, attrs):
        for n, item in enumerate(items):
            folder = "requests" if item.in_scope else "archive"
            sender = ctx.email(item.key.lower())
            subject = f"{item.key}: {item.label}" if item.label != item.key else item.key
            row = _message(ctx, folder=folder, sender=sender, subject=subject, body=details(item, attrs), hours=-(len(items) - n) - 1)
            item.rid = row["id"]
            item.extra.update(folder=folder, sender=sender)

    def where(self, ctx):
        return "the messages in the requests folder of your mailbox"

    def reads(self, ctx, items):
        ctx.call("list_emails", folder="requests")
        for item in items:
            if item.in_scope:
                ctx.call("read_email", message_id=item.rid)


class PolicyMail(Carrier):
    app = "mail"
    carrier = "policy mail"

    def place(self, ctx, title, text):
        sender = ctx.email("policy")
        row = _message(ctx, folder="inbox", sender=sender, subject=title, body=text, hours=-72, read=True)
        ctx.stated.append(text)
        ctx.call("search_emails", query=title)
        ctx.call("read_email", message_id=row["id"])
        return f'the "{title}" email from {sender} in your inbox'

    def place_reference(self, ctx, title, lines):
        row = _message(ctx, folder="inbox", sender=ctx.email("policy"), subject=title, body="\n".join(lines), hours=-70, read=True)
        ctx.stated.append("\n".join(lines))
        ctx.call("read_email", message_id=row["id"])
        return f'the "{title}" email in your inbox'


class SendSummary(Report):
    app = "mail"
    kind = "send email"

    def setup(self, ctx):
        _setup(ctx)
        self.to = ctx.email(ctx.rng.choice(("reports", "controller", "audit-desk")))
        # the recipient's ask; it also gives the mailbox a subject to reuse (see the core note in the report)
        _message(ctx, folder="inbox", sender=self.to, subject="Summary request",
                 body="Please send me the summary the policy describes once you are done.", hours=-5)

    def instruction(self, ctx, selection):
        return f"Afterwards, send one email to {self.to} whose body lists the key of {selection}."

    def ask(self):
        return "send the summary email the policy asks for"

    def apply(self, ctx, reported, others, noun):
        ctx.call("send_email", to=[self.to], subject=f"{noun.capitalize()} summary", body="\n".join(i.key for i in reported))
        for item in reported:
            ctx.expect("mail sent with terms", f"summary to {self.to} lists {item.key}", "mail.messages",
                       [clause("folder", "=", "sent"), clause("recipients", "contains", self.to), clause("body", "contains", item.key)], ">= 1")
        for item in others:
            ctx.forbid("nothing sent about", f"no sent mail names {item.key} ({item.why})", "mail.messages",
                       [clause("folder", "=", "sent"), clause("body", "contains", item.key)], "= 0")

