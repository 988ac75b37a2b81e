"""invoicing: items are submitted vendor invoices; the amount is a real positive value of the row."""

from __future__ import annotations

from envtrain.compose.archetypes.common import any_numeric
from envtrain.compose.context import BuildContext, Item, Unbuildable, clause, details
from envtrain.compose.hosts.base import Action, Host, left_alone, stamp, term

APPROVAL_LIMIT = 1_000_000_000  # the persona may approve any amount a rendered value can take


def _setup(ctx: BuildContext) -> dict:
    state = ctx.scaffold.get("invoicing")
    if state is None:
        vendor = ctx.add("invoicing.vendors", {"name": ctx.short(60), "email": ctx.email("billing"),
                                               "payment_terms": "net30", "status": "active"})
        ctx.add("invoicing.approvers", {"email": ctx.persona["email"], "name": "Operations controller", "role": "controller",
                                        "approval_limit": APPROVAL_LIMIT, "active": True}, key=None)
        state = ctx.scaffold["invoicing"] = {"vendor": vendor["id"], "clerk": ctx.email("ap-clerk")}
    return state


def _untouched(ctx: BuildContext, item: Item) -> None:
    # flag, approve, reject and submit all set updated_at; submit reaches the drafts, flag the rest
    left_alone(ctx, item, "invoice", "invoicing.invoices")


class Flag(Action):
    kind = "flag record"

    def values(self, ctx, n):
        return [term(ctx)]

    def phrase(self, value):
        return f"flag it for review with the reason '{value}'"

    def done(self, value):
        return "flagged for review"

    def apply(self, ctx, item, value):
        ctx.call("flag_invoice", invoice_id=item.rid, reason=value)
        ctx.expect("record flagged with reason", f"invoice {item.key} flagged ({item.why})", "invoicing.invoices",
                   [clause("id", "=", item.rid), clause("flagged", "=", True), clause("flag_reason", "contains", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Approve(Action):
    kind = "approve invoice"

    def values(self, ctx, n):
        return ["approve"]

    def phrase(self, value):
        return "approve it"

    def done(self, value):
        return "approved"

    def apply(self, ctx, item, value):
        ctx.call("approve_invoice", invoice_id=item.rid)
        ctx.expect("status transition", f"invoice {item.key} approved ({item.why})", "invoicing.invoices",
                   [clause("id", "=", item.rid), clause("status", "=", "approved"), clause("approved_by", "=", ctx.persona["email"])])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Reject(Action):
    kind = "reject invoice"

    def values(self, ctx, n):
        return [term(ctx)]

    def phrase(self, value):
        return f"reject it with the reason '{value}'"

    def done(self, value):
        return "rejected"

    def apply(self, ctx, item, value):
        ctx.call("reject_invoice", invoice_id=item.rid, reason=value)
        ctx.expect("status transition", f"invoice {item.key} rejected ({item.why})", "invoicing.invoices",
                   [clause("id", "=", item.rid), clause("status", "=", "rejected"), clause("rejection_reason", "contains", value)])

    def untouched(self, ctx, item):
        _untouched(ctx, item)


class Invoices(Host):
    app = "invoicing"
    noun = "invoice"
    plural = "invoices"
    scoped = "submitted invoice"
    scoped_plural = "submitted invoices"
    actions = {a.kind: a for a in (Flag, Approve, Reject)}

    def fits(self, card):
        return any_numeric(card, positive=True, distinct=2)

    def setup(self, ctx):
        _setup(ctx)

    def seed(self, ctx, items, attrs):
        state = _setup(ctx)
        amount = self._amount_column(items, attrs)
        for item in items:
            row = ctx.add("invoicing.invoices", {
                "number": item.key, "vendor_id": state["vendor"],
                "description": (f"{item.label}\n" if item.label != item.key else "") + details(item, attrs),
                "amount": item.row[amount], "currency": "USD", "issue_date": ctx.date(days=-10), "due_date": ctx.date(days=20),
                "status": "submitted" if item.in_scope else "draft", "amount_paid": 0, "flagged": False,
                "created_by": state["clerk"], "submitted_by": state["clerk"] if item.in_scope else None,
                "submitted_at": stamp(ctx) if item.in_scope else None, "created_at": stamp(ctx), "updated_at": stamp(ctx),
            })
            item.rid, item.extra["updated_at"] = row["id"], stamp(ctx)

    @staticmethod
    def _amount_column(items: list[Item], attrs: list[str]) -> str:
        """The amount: a column positive on every item, the rule's own columns first."""
        names = list(attrs) + [k for k in items[0].row if k not in attrs and k != "_pos"]
        for name in names:
            if all(isinstance(i.row.get(name), (int, float)) and not isinstance(i.row.get(name), bool) and i.row[name] > 0 for i in items):
                return name
        raise Unbuildable("schema compatibility: invoicing needs a column positive on every row for the amount")

    def where(self, ctx):
        return "the submitted invoices in accounts payable"

    def reads(self, ctx, items):
        ctx.call("list_invoices", status="submitted")
        for item in items:
            if item.in_scope:
                ctx.call("get_invoice", invoice_id=item.rid)
