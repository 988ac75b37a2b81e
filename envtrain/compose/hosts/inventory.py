"""inventory: items are products stocked in the main warehouse (their attributes in the product name);
out-of-scope products sit in the annex warehouse. Writes: restock requests and stock write-offs."""

from __future__ import annotations

from envtrain.compose.context import BuildContext, Item, clause, details
from envtrain.compose.hosts.base import Action, Host, pick, term

MAIN, ANNEX = "MAIN", "ANNEX"
QUANTITIES = ("6", "12", "24", "48")  # restock sizes a rule can route between
STOCK, REORDER, PRICE = 4, 5, 25.0  # every product is at its reorder level: restocking is plausible for each


def _setup(ctx: BuildContext) -> dict:
    state = ctx.scaffold.get("inventory")
    if state is None:
        ctx.add("inventory.warehouses", {"code": MAIN, "name": f"{ctx.short(40)} main warehouse", "active": True}, key=None)
        ctx.add("inventory.warehouses", {"code": ANNEX, "name": f"{ctx.short(40)} annex", "active": True}, key=None)
        state = ctx.scaffold["inventory"] = {}
    return state


class Restock(Action):
    kind = "request restock"
    arity = "route"

    def values(self, ctx, n):
        return pick(ctx, list(QUANTITIES), n)

    def phrase(self, value):
        return f"ask purchasing to restock it with {value} units"

    def done(self, value):
        return f"given a restock request for {value} units"

    def apply(self, ctx, item, value):
        ctx.call("request_restock", sku=item.rid, quantity=int(value))
        ctx.expect("record created with fields", f"product {item.key} restock of {value} requested ({item.why})",
                   "inventory.restock_requests",
                   [clause("sku", "=", item.rid), clause("quantity", "=", int(value)), clause("status", "=", "open")])

    def untouched(self, ctx, item):
        ctx.forbid("nothing attached", f"no restock request for product {item.key} ({item.why})", "inventory.restock_requests",
                   [clause("sku", "=", item.rid)], "= 0")


class WriteOff(Action):
    kind = "adjust stock"

    def values(self, ctx, n):
        return [term(ctx)]

    def phrase(self, value):
        return f"write off one unit of it (a stock adjustment of -1) with the reason '{value}'"

    def done(self, value):
        return "written off by one unit"

    def apply(self, ctx, item, value):
        ctx.call("adjust_stock", sku=item.rid, delta=-1, reason=value)
        ctx.expect("record created with fields", f"product {item.key} written off by one unit ({item.why})",
                   "inventory.stock_adjustments",
                   [clause("sku", "=", item.rid), clause("delta", "=", -1), clause("reason", "contains", value)], ">= 1")

    def untouched(self, ctx, item):
        ctx.forbid("nothing attached", f"no stock adjustment of product {item.key} ({item.why})", "inventory.stock_adjustments",
                   [clause("sku", "=", item.rid)], "= 0")


class Products(Host):
    app = "inventory"
    noun = "product"
    plural = "products"
    scoped = "product in the main warehouse"
    scoped_plural = "products in the main warehouse"
    actions = {a.kind: a for a in (Restock, WriteOff)}

    def setup(self, ctx):
        _setup(ctx)

    def seed(self, ctx, items, attrs):
        _setup(ctx)
        for item in items:
            shown = details(item, attrs, sep="; ")
            name = f"{item.label} ({shown})" if item.label != item.key else f"Stock item ({shown})"
            ctx.add("inventory.products", {
                "sku": item.key, "name": name, "price": PRICE, "stock": STOCK, "reorder_level": REORDER,
                "warehouse": MAIN if item.in_scope else ANNEX, "discontinued": False,
            }, key=None)
            item.rid = item.key

    def where(self, ctx):
        return f"the products stocked in warehouse {MAIN} of the inventory"

    def reads(self, ctx, items: list[Item]):
        ctx.call("list_products", warehouse=MAIN)
        for item in items:
            if item.in_scope:
                ctx.call("get_product", sku=item.rid)
