"""The inventory app: orders with lines, shipping that takes stock, cancellation, stock adjustments, restocking."""

from __future__ import annotations

import pytest

from envtrain.core import ErrorKind

from .kit import app_fixtures, call, refused, row

ME = "luis@warehouse.test"
NOW = "2026-03-02T10:00:00Z"


def product(sku, stock, reorder, price=10.0, *, discontinued=False, warehouse="RNO-1"):
    return {"sku": sku, "name": f"Product {sku}", "category": "hardware", "price": price, "stock": stock,
            "reorder_level": reorder, "warehouse": warehouse, "discontinued": discontinued}


ROWS = {
    "inventory.warehouses": [{"code": "RNO-1", "name": "Reno", "city": "Reno", "active": True}],
    "inventory.products": [
        product("WID-100", 40, 10, 12.5),
        product("GAD-200", 5, 4, 149.0),
        product("OLD-900", 50, 0, 3.0, discontinued=True),
    ],
    "inventory.orders": [
        {"id": 1, "customer": "Ridgeway Dental", "ship_to": "14 Ridgeway Ave", "status": "pending", "total": 360.5},
        {"id": 2, "customer": "Blue Heron Cafe", "ship_to": "220 River St", "status": "pending", "total": 894.0},
        {"id": 3, "customer": "Summit Physio", "ship_to": "9 Summit Rd", "status": "shipped", "total": 12.5},
        {"id": 4, "customer": "Lakeside Print", "ship_to": "3 Shore Ln", "status": "pending", "total": 0},
    ],
    "inventory.order_lines": [
        {"id": 1, "order_id": 1, "sku": "WID-100", "quantity": 5, "unit_price": 12.5, "line_total": 62.5},
        {"id": 2, "order_id": 1, "sku": "GAD-200", "quantity": 2, "unit_price": 149.0, "line_total": 298.0},
        {"id": 3, "order_id": 2, "sku": "GAD-200", "quantity": 6, "unit_price": 149.0, "line_total": 894.0},
        {"id": 4, "order_id": 3, "sku": "WID-100", "quantity": 1, "unit_price": 12.5, "line_total": 12.5},
    ],
    "inventory.restock_requests": [{"id": 1, "sku": "WID-100", "quantity": 20, "status": "open"}],
}


runtime, session = app_fixtures("inventory", ROWS, persona=ME, base_time=NOW)


def stock(s):
    return {p["sku"]: p["stock"] for p in s.world.rows("inventory.products")}


def test_ship_order_takes_every_lines_stock_and_records_a_shipment(session):
    r = call(session, "ship_order", order_id=1, carrier="ups", tracking_number="1Z-1")
    assert r.ok, r.message
    assert stock(session) == {"WID-100": 35, "GAD-200": 3, "OLD-900": 50}
    order = row(session, "inventory.orders", 1)
    assert (order["status"], order["shipped_at"]) == ("shipped", NOW)
    assert session.world.rows("inventory.shipments") == [
        {"id": 1, "order_id": 1, "warehouse": "RNO-1", "carrier": "ups", "tracking_number": "1Z-1", "shipped_by": ME, "shipped_at": NOW}]


def test_place_order_and_add_lines_priced_at_the_current_price(session):
    r = call(session, "place_order", customer="Kestrel Labs", ship_to="1 Lab Way")
    assert r.ok, r.message
    assert (r.output["created"]["id"], r.output["created"]["status"], r.output["created"]["total"]) == (5, "pending", 0)
    assert call(session, "add_order_line", order_id=5, sku="WID-100", quantity=4).ok
    r = call(session, "add_order_line", order_id=5, sku="GAD-200", quantity=5)  # exactly the stock on hand
    assert r.ok, r.message
    assert r.output["created"] == {"id": 6, "order_id": 5, "sku": "GAD-200", "quantity": 5, "unit_price": 149.0, "line_total": 745.0}
    assert row(session, "inventory.orders", 5)["total"] == 795.0
    assert stock(session)["GAD-200"] == 5  # adding a line reserves nothing; shipping takes the stock


def test_cancel_adjust_and_restock(session):
    assert call(session, "cancel_order", order_id=2, reason="customer asked").ok
    order = row(session, "inventory.orders", 2)
    assert (order["status"], order["cancel_reason"], order["cancelled_at"]) == ("cancelled", "customer asked", NOW)
    assert call(session, "adjust_stock", sku="GAD-200", delta=-2, reason="damaged in transit").ok
    assert stock(session)["GAD-200"] == 3
    assert [(a["sku"], a["delta"], a["reason"], a["adjusted_by"]) for a in session.world.rows("inventory.stock_adjustments")] == [
        ("GAD-200", -2, "damaged in transit", ME)]
    r = call(session, "request_restock", sku="GAD-200", quantity=8)
    assert r.ok, r.message
    assert (r.output["created"]["status"], r.output["created"]["requested_by"]) == ("open", ME)


REFUSALS = [
    ("add_order_line", {"order_id": 99, "sku": "WID-100", "quantity": 1}, ErrorKind.NOT_FOUND, "No order 99."),
    ("add_order_line", {"order_id": 4, "sku": "NOPE", "quantity": 1}, ErrorKind.NOT_FOUND, "No product NOPE."),
    ("add_order_line", {"order_id": 3, "sku": "WID-100", "quantity": 1}, ErrorKind.INVALID_TRANSITION, "Order 3 is not pending"),
    ("add_order_line", {"order_id": 4, "sku": "OLD-900", "quantity": 1}, ErrorKind.INVALID_TRANSITION, "Product OLD-900 is discontinued"),
    ("add_order_line", {"order_id": 4, "sku": "GAD-200", "quantity": 6}, ErrorKind.CONSTRAINT_VIOLATION, "Not enough stock of GAD-200 for 6 units."),
    ("ship_order", {"order_id": 99, "carrier": "ups", "tracking_number": "x"}, ErrorKind.NOT_FOUND, "No order 99."),
    ("ship_order", {"order_id": 3, "carrier": "ups", "tracking_number": "x"}, ErrorKind.INVALID_TRANSITION, "Order 3 is not pending"),
    ("ship_order", {"order_id": 4, "carrier": "ups", "tracking_number": "x"}, ErrorKind.INVALID_TRANSITION, "Order 4 has no lines to ship."),
    ("ship_order", {"order_id": 2, "carrier": "ups", "tracking_number": "x"}, ErrorKind.CONSTRAINT_VIOLATION,
     "Not enough stock to ship every line of order 2; nothing was shipped."),
    ("cancel_order", {"order_id": 99, "reason": "x"}, ErrorKind.NOT_FOUND, "No order 99."),
    ("cancel_order", {"order_id": 3, "reason": "x"}, ErrorKind.INVALID_TRANSITION, "Order 3 has already shipped or been cancelled"),
    ("adjust_stock", {"sku": "NOPE", "delta": 1, "reason": "x"}, ErrorKind.NOT_FOUND, "No product NOPE."),
    ("adjust_stock", {"sku": "GAD-200", "delta": -6, "reason": "count"}, ErrorKind.CONSTRAINT_VIOLATION, "Stock cannot go below zero."),
    ("request_restock", {"sku": "NOPE", "quantity": 1}, ErrorKind.NOT_FOUND, "No product NOPE."),
    ("request_restock", {"sku": "OLD-900", "quantity": 1}, ErrorKind.INVALID_TRANSITION, "Product OLD-900 is discontinued and is not restocked."),
    ("request_restock", {"sku": "WID-100", "quantity": 1}, ErrorKind.INVALID_TRANSITION, "Product WID-100 already has an open restock request."),
]


@pytest.mark.parametrize("tool,args,kind,text", REFUSALS, ids=[f"{t}-{m[:30]}" for t, _, _, m in REFUSALS])
def test_refusals_name_the_problem_and_leave_the_world_unchanged(runtime, session, tool, args, kind, text):
    refused(session, tool, kind, text, **args)
    assert session.world.content_hash() == runtime.w0_hash


def test_two_lines_of_one_sku_that_together_exceed_stock_do_not_ship(runtime, session):
    assert call(session, "add_order_line", order_id=4, sku="GAD-200", quantity=3).ok
    assert call(session, "add_order_line", order_id=4, sku="GAD-200", quantity=3).ok
    r = call(session, "ship_order", order_id=4, carrier="dhl", tracking_number="x")
    assert (r.error, r.message) == (ErrorKind.CONSTRAINT_VIOLATION, "Stock cannot go below zero.")
    assert stock(session)["GAD-200"] == 5 and session.world.rows("inventory.shipments") == []


def test_reads(session):
    assert [p["sku"] for p in call(session, "list_products", warehouse="RNO-1").output["items"]] == ["GAD-200", "OLD-900", "WID-100"]
    assert call(session, "list_low_stock_products").output["items"] == []
    assert call(session, "adjust_stock", sku="GAD-200", delta=-1, reason="cycle count").ok  # 4: at its reorder level
    assert [p["sku"] for p in call(session, "list_low_stock_products", warehouse="RNO-1").output["items"]] == ["GAD-200"]
    assert [p["sku"] for p in call(session, "search_products", query="wid").output["items"]] == ["WID-100"]
    assert call(session, "get_product", sku="GAD-200").output["stock"] == 4
    assert call(session, "get_product", sku="NOPE").error == ErrorKind.NOT_FOUND
    assert [o["id"] for o in call(session, "list_orders", status="pending").output["items"]] == [1, 2, 4]
    assert call(session, "get_order", order_id=2).output["customer"] == "Blue Heron Cafe"
    assert [(l["sku"], l["quantity"]) for l in call(session, "list_order_lines", order_id=1).output["items"]] == [("WID-100", 5), ("GAD-200", 2)]
    assert [r["sku"] for r in call(session, "list_restock_requests", status="open").output["items"]] == ["WID-100"]
