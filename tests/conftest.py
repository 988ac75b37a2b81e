"""Shared fixtures: a small hand-built app and world whose every count is known."""

from __future__ import annotations

import pytest

from envtrain.core import Environment, Runtime

LEDGER_APP = {
    "name": "ledger",
    "description": "a tiny accounts-payable ledger for tests",
    "entities": {
        "vendors": {
            "columns": {
                "id": {"type": "integer"},
                "name": {"type": "text", "required": True},
                "tier": {"type": "text", "enum": ["gold", "silver", "bronze"]},
                "blocked": {"type": "boolean", "default": False},
            }
        },
        "invoices": {
            "columns": {
                "id": {"type": "integer"},
                "vendor_id": {"type": "integer", "required": True, "ref": "vendors.id"},
                "amount": {"type": "number", "required": True},
                "paid": {"type": "number", "default": 0},
                "status": {"type": "text", "enum": ["draft", "approved", "paid"], "default": "'draft'"},
                "memo": {"type": "text"},
                "due": {"type": "date"},
                "tags": {"type": "json"},
                "updated_at": {"type": "datetime"},
            },
            "constraints": [{"name": "paid within amount", "where": ["paid <= amount"], "message": "paid exceeds the amount"}],
        },
    },
    "tools": [
        {
            "name": "list_invoices", "description": "list invoices", "family": "list", "entity": "invoices",
            "parameters": {"type": "object", "properties": {"status": {"type": "string"}, "limit": {"type": "integer"}, "offset": {"type": "integer"}}},
            "where": ["status = $arg.status"],
        },
        {
            "name": "pay_invoice", "description": "pay part of an invoice", "family": "update",
            "parameters": {"type": "object", "properties": {"invoice_id": {"type": "integer"}, "amount": {"type": "number"}},
                           "required": ["invoice_id", "amount"]},
            "preconditions": [
                {"entity": "invoices", "where": ["id = $arg.invoice_id"], "error": "not_found", "message": "No invoice {invoice_id}."},
                {"entity": "invoices", "where": ["id = $arg.invoice_id", "status = 'approved'"], "message": "Invoice {invoice_id} is not approved."},
                {"entity": "vendors", "where": ["blocked = true", "id = one(invoices.vendor_id where id = $arg.invoice_id)"],
                 "count": "not exists", "error": "permission_denied", "message": "The vendor of invoice {invoice_id} is blocked."},
            ],
            "effects": [{"kind": "update", "entity": "invoices", "where": ["id = $arg.invoice_id"],
                         "values": {"paid": "$was.paid + $arg.amount", "updated_at": "$now"}}],
        },
        {
            "name": "create_invoice", "description": "create an invoice", "family": "create",
            "parameters": {"type": "object", "properties": {"vendor_id": {"type": "integer"}, "amount": {"type": "number"}, "memo": {"type": "string"}},
                           "required": ["vendor_id", "amount"]},
            "effects": [{"kind": "insert", "entity": "invoices", "values": {"vendor_id": "$arg.vendor_id", "amount": "$arg.amount", "memo": "$arg.memo", "updated_at": "$now"}}],
        },
    ],
    "capabilities": {"record payment": ["pay_invoice"], "create invoice": ["create_invoice"]},
}

LEDGER_ROWS = {
    "ledger.vendors": [
        {"id": 1, "name": "Acme Supply", "tier": "gold", "blocked": False},
        {"id": 2, "name": "Borealis Ltd", "tier": "silver", "blocked": True},
        {"id": 3, "name": "Cobalt & Sons", "tier": None, "blocked": False},
    ],
    "ledger.invoices": [
        {"id": 10, "vendor_id": 1, "amount": 100.0, "paid": 0, "status": "approved", "memo": "Q1 Paper order", "due": "2026-01-01", "tags": ["office", "paper"]},
        {"id": 11, "vendor_id": 1, "amount": 250.0, "paid": 50, "status": "draft", "memo": None, "due": "2026-02-15", "tags": []},
        {"id": 12, "vendor_id": 2, "amount": 75.5, "paid": 0, "status": "approved", "memo": "toner", "due": None, "tags": ["office"]},
        {"id": 13, "vendor_id": 3, "amount": 400.0, "paid": 400, "status": "paid", "memo": "Servers (Q1)", "due": "2025-12-20", "tags": None},
    ],
}


def ledger_env(**overrides) -> Environment:
    doc = {
        "apps": [LEDGER_APP],
        "world": {"base_time": "2026-01-10T12:00:00Z", "tables": LEDGER_ROWS, "session": {"region": "EU"}},
        "request": "Pay invoice 10 in full.",
        "persona": {"email": "clerk@example.com", "role": "clerk"},
        "verifier": {
            "positive": [{"name": "invoice 10 paid", "entity": "ledger.invoices", "where": ["id = 10", "paid = amount"], "count": "= 1"}],
            "negative": [{"name": "no invoice created", "entity": "ledger.invoices", "count": "= 4"}],
        },
        "reference_solution": [{"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100.0}}],
    }
    doc.update(overrides)
    return Environment.parse(doc)


@pytest.fixture
def ledger() -> Runtime:
    return Runtime(ledger_env())
