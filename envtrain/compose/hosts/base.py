"""The three roles an app plays in a built environment, as small classes each app module fills in.

- ``Host``: holds the items (one record per dataset row), in scope or not, and offers ``Action``s:
  the per-item writes an intent atom names (escalate ticket, move card, flag record ...).
- ``Report``: a deliverable listing the items the rule selected (send email, write file ...).
- ``Carrier``: writes the rule text (and a reference list) into the app, and says where it is.

An action's ``apply`` adds π's write and its V+ assertion; ``untouched`` adds the V− assertion for
an item the rule leaves alone. Each V− must be breakable by some single public call (admission 4).
"""

from __future__ import annotations

from typing import Any, ClassVar

from envtrain.compose.context import BuildContext, Item, clause


class Action:
    kind: ClassVar[str]
    arity: ClassVar[str] = "binary"  # "route": the write takes one of several values

    def __init__(self, host: "Host") -> None:
        self.host = host

    def values(self, ctx: BuildContext, n: int) -> list[str]:
        """``n`` distinct values the write can take (route) or the one term/recipient it uses (binary)."""
        raise NotImplementedError

    def phrase(self, value: str) -> str:
        """Imperative, for the carrier: "escalate it to the billing team"."""
        raise NotImplementedError

    def done(self, value: str) -> str:
        """Past participle, for a report's selection: "escalated to the billing team"."""
        raise NotImplementedError

    def apply(self, ctx: BuildContext, item: Item, value: str) -> None:
        raise NotImplementedError

    def untouched(self, ctx: BuildContext, item: Item) -> None:
        raise NotImplementedError


class AddComment(Action):
    """Comment on the item: ``call(<column>=id, body=term, **flags)`` adds a row to ``table``."""

    kind = "add comment"
    call: ClassVar[str]
    table: ClassVar[str]  # the comments table
    column: ClassVar[str]  # its reference to the item, also the call's argument
    flags: ClassVar[dict[str, Any]] = {}  # further arguments, each checked on the comment row
    qualifier: ClassVar[str] = ""  # "internal "

    def values(self, ctx, n):
        return [term(ctx)]

    def phrase(self, value):
        return f"comment '{value}' on it"

    def done(self, value):
        return f"given the {self.qualifier}comment '{value}'"

    def apply(self, ctx, item, value):
        ctx.call(self.call, **{self.column: item.rid}, body=value, **self.flags)
        ctx.expect("comment with terms", f"{self.host.noun} {item.key} has the {self.qualifier}comment ({item.why})", self.table,
                   [clause(self.column, "=", item.rid)] + [clause(k, "=", v) for k, v in self.flags.items()]
                   + [clause("body", "contains", value)], ">= 1")

    def untouched(self, ctx, item):
        ctx.forbid("nothing attached", f"no comment on {self.host.noun} {item.key} ({item.why})", self.table,
                   [clause(self.column, "=", item.rid)], "= 0")


class Host:
    app: ClassVar[str]
    noun: ClassVar[str]  # "ticket"
    plural: ClassVar[str]  # "tickets"
    scoped: ClassVar[str]  # the in-scope items in the carrier's words: "open ticket"
    scoped_plural: ClassVar[str]
    actions: ClassVar[dict[str, type[Action]]]
    details_field: ClassVar[bool] = True  # attributes are shown as "column: value" lines

    def action(self, kind: str) -> Action:
        return self.actions[kind](self)

    def fits(self, card: Any) -> bool:
        """Whether the table has what this app's records need beyond the rule's columns."""
        return True

    def setup(self, ctx: BuildContext) -> None:
        """Scaffolding made once per environment (containers, the persona's rights)."""

    def seed(self, ctx: BuildContext, items: list[Item], attrs: list[str]) -> None:
        raise NotImplementedError

    def where(self, ctx: BuildContext) -> str:
        """The in-scope items as the request names them: "the open tickets in the helpdesk queue"."""
        raise NotImplementedError

    def reads(self, ctx: BuildContext, items: list[Item]) -> None:
        """π's reads: list the in-scope items and open each."""


class Report:
    app: ClassVar[str]
    kind: ClassVar[str]

    def setup(self, ctx: BuildContext) -> None:
        pass

    def instruction(self, ctx: BuildContext, selection: str) -> str:
        """The carrier sentence: where the report goes and what it lists (``selection``)."""
        raise NotImplementedError

    def ask(self) -> str:
        """The request's words for the deliverable, which name it but not the rule."""
        raise NotImplementedError

    def apply(self, ctx: BuildContext, reported: list[Item], others: list[Item], noun: str) -> None:
        raise NotImplementedError


class Carrier:
    app: ClassVar[str]
    carrier: ClassVar[str]

    def place(self, ctx: BuildContext, title: str, text: str) -> str:
        """Write the rule into the app; add π's reads of it; return the request's pointer to it."""
        raise NotImplementedError

    def place_reference(self, ctx: BuildContext, title: str, lines: list[str]) -> str:
        """A reference list (reconciliation) in the same app; returns how the rule names it."""
        raise NotImplementedError


def sentences(text: str) -> list[str]:
    """Split a rule text into sentences (sheet rows, message lines)."""
    out, current = [], []
    for word in text.split(" "):
        current.append(word)
        if word.endswith((".", ":")) and len(" ".join(current)) > 30:
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


def pick(ctx: BuildContext, options: list[Any], n: int) -> list[Any]:
    if n > len(options):
        from envtrain.compose.context import Unbuildable

        raise Unbuildable(f"rule attachment: the write offers {len(options)} values, the rule needs {n}")
    return ctx.rng.sample(options, n)


def stamp(ctx: BuildContext) -> str:
    """When W0's records were last touched: a day before the episode starts."""
    return ctx.time(days=-1)


def left_alone(ctx: BuildContext, item: Item, noun: str, table: str) -> None:
    """V−: the item's record keeps the ``updated_at`` W0 gave it (every write of the app sets it)."""
    ctx.forbid("record untouched", f"{noun} {item.key} left alone ({item.why})", table,
               [clause("id", "=", item.rid), clause("updated_at", "=", item.extra["updated_at"])])


TERMS = ("checked against policy", "held for review", "policy check done", "needs a second look", "cleared by review")


def term(ctx: BuildContext) -> str:
    return ctx.rng.choice(TERMS)


__all__ = ["Action", "AddComment", "Carrier", "Host", "Report", "TERMS", "left_alone", "pick", "sentences", "stamp", "term"]
