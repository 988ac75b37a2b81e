"""The invoicing app: draft → submitted → approved → paid / rejected, approver permissions, payments; refusals; reads."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from envtrain.core import ErrorKind

from .kit import app_runtime, call, open_session, refused, row, rows

CLERK = "clerk@ap.test"
CONTROLLER = "jon@ap.test"  # approval limit 5000
MANAGER = "lee@ap.test"  # approval limit 1000
NOW = "2026-03-09T09:00:00Z"


def invoice(id, vendor_id, amount, status, *, paid=0.0, flagged=False, submitted_by=CLERK, **extra):
    return {"id": id, "number": f"INV-{id}", "vendor_id": vendor_id, "amount": amount, "currency": "USD",
            "issue_date": "2026-02-01", "due_date": "2026-03-10", "status": status, "amount_paid": paid,
            "flagged": flagged, "submitted_by": submitted_by if status != "draft" else None, **extra}


ROWS = {
    "invoicing.vendors": [
        {"id": 1, "name": "Northwind", "payment_terms": "net30", "status": "active"},
        {"id": 2, "name": "Fabrikam", "payment_terms": "net45", "status": "blocked"},
    ],
    "invoicing.approvers": [
        {"email": CONTROLLER, "name": "Jon Weiss", "role": "controller", "approval_limit": 5000, "active": True},
        {"email": MANAGER, "name": "Lee Park", "role": "manager", "approval_limit": 1000, "active": True},
        {"email": "old@ap.test", "name": "Former", "role": "cfo", "approval_limit": 99999, "active": False},
    ],
    "invoicing.invoices": [
        invoice(1, 1, 4250.0, "draft"),
        invoice(2, 1, 1980.5, "submitted"),
        invoice(3, 1, 3000.0, "approved", paid=1000.0),
        invoice(4, 1, 760.0, "approved", flagged=True, flag_reason="duplicate?"),
        invoice(5, 2, 500.0, "approved"),
        invoice(6, 1, 800.0, "submitted", submitted_by=CONTROLLER),
        invoice(7, 1, 900.0, "paid", paid=900.0),
        invoice(8, 1, 600.0, "submitted", flagged=True, flag_reason="amount differs from PO"),
    ],
    "invoicing.payments": [{"id": 1, "invoice_id": 3, "amount": 1000.0, "method": "ach", "reference": "RUN-0216"}],
}


RUNTIMES = {actor: app_runtime("invoicing", ROWS, persona=actor, base_time=NOW) for actor in (CLERK, CONTROLLER, MANAGER)}


@pytest.fixture
def as_actor():
    """``as_actor(email)``: a fresh session acting as that person; all are closed after the test."""
    with ExitStack() as opened:
        yield lambda actor: opened.enter_context(open_session(RUNTIMES[actor]))


def inv(s, id):
    return row(s, "invoicing.invoices", id)


def test_invoice_lifecycle_create_submit_approve_pay(as_actor):
    clerk = as_actor(CLERK)
    r = call(clerk, "create_invoice", vendor_id=1, number="NW-1", amount=1200.0, currency="USD", issue_date="2026-03-01", due_date="2026-03-31")
    assert r.ok, r.message
    assert (r.output["created"]["id"], r.output["created"]["status"], r.output["created"]["created_by"]) == (9, "draft", CLERK)
    assert call(clerk, "submit_invoice", invoice_id=2).ok is False  # already submitted
    assert call(clerk, "submit_invoice", invoice_id=1).ok
    assert (inv(clerk, 1)["status"], inv(clerk, 1)["submitted_by"]) == ("submitted", CLERK)

    controller = as_actor(CONTROLLER)
    r = call(controller, "approve_invoice", invoice_id=2, comment="ok")
    assert r.ok, r.message
    assert (inv(controller, 2)["status"], inv(controller, 2)["approved_by"]) == ("approved", CONTROLLER)
    assert [(a["invoice_id"], a["approver"], a["role"], a["decision"], a["comment"]) for a in controller.world.rows("invoicing.approvals")] == [
        (2, CONTROLLER, "controller", "approved", "ok")]
    # Partial payments up to the balance, then close the invoice.
    assert call(controller, "record_payment", invoice_id=2, amount=980.5, method="ach", reference="RUN-1").ok
    assert inv(controller, 2)["amount_paid"] == 980.5
    assert call(controller, "mark_invoice_paid", invoice_id=2).error == ErrorKind.INVALID_TRANSITION
    assert call(controller, "record_payment", invoice_id=2, amount=1000.0, method="wire").ok
    r = call(controller, "mark_invoice_paid", invoice_id=2)
    assert r.ok, r.message
    row = inv(controller, 2)
    assert (row["status"], row["amount_paid"], row["paid_at"]) == ("paid", 1980.5, "2026-03-09T09:00:04Z")
    assert [(p["amount"], p["method"], p["recorded_by"]) for p in rows(controller, "invoicing.payments", invoice_id=2)] == [
        (980.5, "ach", CONTROLLER), (1000.0, "wire", CONTROLLER)]


def test_reject_and_flag(as_actor):
    s = as_actor(MANAGER)
    assert call(s, "reject_invoice", invoice_id=2, reason="PO missing").ok
    assert (inv(s, 2)["status"], inv(s, 2)["rejection_reason"]) == ("rejected", "PO missing")
    assert s.world.rows("invoicing.approvals")[0]["decision"] == "rejected"
    assert call(s, "flag_invoice", invoice_id=3, reason="bank details changed").ok
    assert (inv(s, 3)["flagged"], inv(s, 3)["flag_reason"]) == (True, "bank details changed")


REFUSALS = [
    (CLERK, "create_invoice", {"vendor_id": 9, "number": "X", "amount": 1, "currency": "USD", "issue_date": "2026-03-01", "due_date": "2026-03-02"},
     ErrorKind.NOT_FOUND, "No vendor 9."),
    (CLERK, "create_invoice", {"vendor_id": 2, "number": "X", "amount": 1, "currency": "USD", "issue_date": "2026-03-01", "due_date": "2026-03-02"},
     ErrorKind.INVALID_TRANSITION, "Vendor 2 is blocked"),
    (CLERK, "create_invoice", {"vendor_id": 1, "number": "INV-3", "amount": 1, "currency": "USD", "issue_date": "2026-03-01", "due_date": "2026-03-02"},
     ErrorKind.CONSTRAINT_VIOLATION, "Vendor 1 already has an invoice numbered INV-3"),
    (CLERK, "create_invoice", {"vendor_id": 1, "number": "X", "amount": 1, "currency": "USD", "issue_date": "2026-03-05", "due_date": "2026-03-02"},
     ErrorKind.CONSTRAINT_VIOLATION, "due date cannot be before its issue date"),
    (CLERK, "create_invoice", {"vendor_id": 1, "number": "X", "amount": -4, "currency": "USD", "issue_date": "2026-03-01", "due_date": "2026-03-02"},
     ErrorKind.CONSTRAINT_VIOLATION, "An invoice amount must be greater than zero."),
    (CLERK, "submit_invoice", {"invoice_id": 99}, ErrorKind.NOT_FOUND, "No invoice 99."),
    (CLERK, "submit_invoice", {"invoice_id": 2}, ErrorKind.INVALID_TRANSITION, "Invoice 2 is not a draft"),
    (CONTROLLER, "approve_invoice", {"invoice_id": 99}, ErrorKind.NOT_FOUND, "No invoice 99."),
    (CLERK, "approve_invoice", {"invoice_id": 2}, ErrorKind.PERMISSION_DENIED, "You are not an active invoice approver"),
    (CONTROLLER, "approve_invoice", {"invoice_id": 1}, ErrorKind.INVALID_TRANSITION, "Invoice 1 is not awaiting approval"),
    (CONTROLLER, "approve_invoice", {"invoice_id": 8}, ErrorKind.INVALID_TRANSITION, "Invoice 8 is flagged for review and cannot be approved."),
    (CONTROLLER, "approve_invoice", {"invoice_id": 6}, ErrorKind.PERMISSION_DENIED, "You submitted invoice 6; another approver must approve it."),
    (MANAGER, "approve_invoice", {"invoice_id": 2}, ErrorKind.PERMISSION_DENIED, "Invoice 2 exceeds your approval limit."),
    (CONTROLLER, "reject_invoice", {"invoice_id": 99, "reason": "x"}, ErrorKind.NOT_FOUND, "No invoice 99."),
    (CLERK, "reject_invoice", {"invoice_id": 2, "reason": "x"}, ErrorKind.PERMISSION_DENIED, "You are not an active invoice approver"),
    (CONTROLLER, "reject_invoice", {"invoice_id": 3, "reason": "x"}, ErrorKind.INVALID_TRANSITION, "Invoice 3 is not awaiting approval"),
    (CLERK, "record_payment", {"invoice_id": 99, "amount": 1, "method": "ach"}, ErrorKind.NOT_FOUND, "No invoice 99."),
    (CLERK, "record_payment", {"invoice_id": 2, "amount": 1, "method": "ach"}, ErrorKind.INVALID_TRANSITION, "Invoice 2 is not approved; only approved invoices can be paid."),
    (CLERK, "record_payment", {"invoice_id": 4, "amount": 1, "method": "ach"}, ErrorKind.INVALID_TRANSITION, "Invoice 4 is flagged for review and cannot be paid."),
    (CLERK, "record_payment", {"invoice_id": 5, "amount": 1, "method": "ach"}, ErrorKind.INVALID_TRANSITION, "The vendor of invoice 5 is blocked"),
    (CLERK, "record_payment", {"invoice_id": 3, "amount": 2000.01, "method": "ach"}, ErrorKind.CONSTRAINT_VIOLATION,
     "A payment of 2000.01 exceeds the balance due on invoice 3."),
    (CLERK, "record_payment", {"invoice_id": 3, "amount": 0, "method": "ach"}, ErrorKind.CONSTRAINT_VIOLATION, "A payment amount must be greater than zero."),
    (CLERK, "mark_invoice_paid", {"invoice_id": 99}, ErrorKind.NOT_FOUND, "No invoice 99."),
    (CLERK, "mark_invoice_paid", {"invoice_id": 7}, ErrorKind.INVALID_TRANSITION, "Invoice 7 is not approved"),
    (CLERK, "mark_invoice_paid", {"invoice_id": 3}, ErrorKind.INVALID_TRANSITION, "Invoice 3 still has a balance due"),
    (CLERK, "flag_invoice", {"invoice_id": 99, "reason": "x"}, ErrorKind.NOT_FOUND, "No invoice 99."),
    (CLERK, "flag_invoice", {"invoice_id": 7, "reason": "x"}, ErrorKind.INVALID_TRANSITION, "Invoice 7 is already paid and cannot be flagged."),
    (CLERK, "flag_invoice", {"invoice_id": 4, "reason": "x"}, ErrorKind.INVALID_TRANSITION, "Invoice 4 is already flagged."),
]


@pytest.mark.parametrize("actor,tool,args,kind,text", REFUSALS, ids=[f"{t}-{m[:30]}" for _, t, _, _, m in REFUSALS])
def test_refusals_name_the_problem_and_leave_the_world_unchanged(as_actor, actor, tool, args, kind, text):
    s = as_actor(actor)
    refused(s, tool, kind, text, **args)
    assert s.world.content_hash() == RUNTIMES[actor].w0_hash


def test_payment_of_exactly_the_balance_is_allowed(as_actor):
    s = as_actor(CLERK)
    assert call(s, "record_payment", invoice_id=3, amount=2000.0, method="check").ok
    assert call(s, "mark_invoice_paid", invoice_id=3).ok
    assert (inv(s, 3)["status"], inv(s, 3)["amount_paid"]) == ("paid", 3000.0)


def test_cent_amounts_that_float_addition_rounds_down_still_settle():
    tables = {**ROWS, "invoicing.invoices": [*ROWS["invoicing.invoices"], invoice(9, 1, 300.3, "approved")]}
    with open_session(app_runtime("invoicing", tables, persona=CLERK, base_time=NOW)) as s:
        assert call(s, "record_payment", invoice_id=9, amount=100.1, method="ach").ok
        assert call(s, "record_payment", invoice_id=9, amount=200.2, method="ach").ok  # sum: 300.29999999999995
        assert call(s, "record_payment", invoice_id=9, amount=0.01, method="ach").error == ErrorKind.CONSTRAINT_VIOLATION
        assert call(s, "mark_invoice_paid", invoice_id=9).ok
        assert inv(s, 9)["status"] == "paid"


def test_reads(as_actor):
    s = as_actor(CLERK)
    assert [i["id"] for i in call(s, "list_invoices", status="approved").output["items"]] == [3, 4, 5]
    assert [i["id"] for i in call(s, "list_invoices", flagged=True).output["items"]] == [4, 8]
    assert [i["number"] for i in call(s, "search_invoices", query="inv-7").output["items"]] == ["INV-7"]
    assert call(s, "get_invoice", invoice_id=3).output["amount_paid"] == 1000.0
    assert [v["name"] for v in call(s, "list_vendors", status="blocked").output["items"]] == ["Fabrikam"]
    assert [(p["amount"], p["reference"]) for p in call(s, "list_payments", invoice_id=3).output["items"]] == [(1000.0, "RUN-0216")]
    assert call(s, "list_invoice_approvals", invoice_id=3).output["items"] == []
