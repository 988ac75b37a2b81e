"""Admission (LegoEnv §3.4): a sound environment is admitted; each planted fault names its condition."""

from __future__ import annotations

import itertools

import pytest

from envtrain.apps.handlers import builtin_handlers
from envtrain.core.admission import check_admission

from ..conftest import LEDGER_APP, ledger_env

PAY_10 = {"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100.0}}
PAID = {"name": "invoice 10 paid", "entity": "ledger.invoices", "where": ["id = 10", "paid = amount"], "count": "= 1"}
NO_NEW = {"name": "no invoice created", "entity": "ledger.invoices", "count": "= 4"}
# A distractor no agent can touch: invoice 12's vendor is blocked, so every payment of it is refused.
UNREACHABLE = {"name": "invoice 12 untouched", "entity": "ledger.invoices", "where": ["id = 12", "paid = 0"], "count": "= 1"}


def failed(report) -> set[int]:
    return {f.condition for f in report.failures}


def test_sound_environment_is_admitted() -> None:
    report = check_admission(ledger_env())
    assert report.admitted, report.to_dict()
    assert report.to_dict()["conditions"] == {str(n): True for n in range(1, 6)}


def test_v_plus_already_true_on_w0() -> None:
    already = {"name": "invoice 13 paid", "entity": "ledger.invoices", "where": ["id = 13", "paid = amount"], "count": "= 1"}
    report = check_admission(ledger_env(verifier={"positive": [PAID, already], "negative": [NO_NEW]}))
    assert failed(report) == {1, 3}  # true on W0, so no write of pi is needed for it either
    first = [f for f in report.failures if f.condition == 1][0]
    assert first.assertion == "V+ invoice 13 paid" and "already holds on W0" in first.reason


def test_v_minus_false_on_w0() -> None:
    broken = {"name": "invoice 11 unpaid", "entity": "ledger.invoices", "where": ["id = 11", "paid = 0"], "count": "= 1"}
    report = check_admission(ledger_env(verifier={"positive": [PAID], "negative": [broken]}))
    assert 1 in failed(report)
    assert any(f.assertion == "V- invoice 11 unpaid" and "does not hold on W0" in f.reason for f in report.failures)


def test_pi_does_not_reach_v() -> None:
    short = {"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 40.0}}
    report = check_admission(ledger_env(reference_solution=[short]))
    assert failed(report) == {2}
    assert "count 0, needs = 1" in report.failures[0].reason


def test_pi_with_a_refused_step() -> None:
    refused = {"tool": "pay_invoice", "arguments": {"invoice_id": 11, "amount": 1.0}}
    report = check_admission(ledger_env(reference_solution=[PAY_10, refused]))
    assert failed(report) == {2}
    assert "step 1 (pay_invoice): invalid_transition: Invoice 11 is not approved." in report.failures[0].reason


def test_v_plus_that_no_write_of_pi_is_needed_for() -> None:
    half = {"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 50.0}}
    some = {"name": "invoice 10 half paid", "entity": "ledger.invoices", "where": ["id = 10", "paid >= 50"], "count": "= 1"}
    report = check_admission(ledger_env(verifier={"positive": [PAID, some], "negative": [NO_NEW]}, reference_solution=[half, half]))
    assert failed(report) == {3}
    assert report.failures[0].assertion == "V+ invoice 10 half paid"


def test_v_minus_that_nothing_can_falsify() -> None:
    fixed = {"name": "vendor name kept", "entity": "ledger.vendors", "where": ["name = 'Acme Supply'"], "count": "= 1"}
    tautology = {"name": "anything", "entity": "ledger.invoices", "count": ">= 0"}
    report = check_admission(ledger_env(verifier={"positive": [PAID], "negative": [NO_NEW, fixed, tautology, UNREACHABLE]}))
    assert failed(report) == {4}
    by_name = {f.assertion: f.reason for f in report.failures}
    assert set(by_name) == {"V- vendor name kept", "V- anything", "V- invoice 12 untouched"}
    assert "no reachable world breaks it" in by_name["V- vendor name kept"]
    assert "no reachable world breaks it" in by_name["V- invoice 12 untouched"]
    assert "holds for every world" in by_name["V- anything"]


def test_reset_that_does_not_restore_w0() -> None:
    """A handler keeping state outside the world (a counter) makes replays diverge after reset."""
    counter = itertools.count(1)

    def stamp(ctx, args):
        ctx.world.conn.execute('UPDATE "ledger__invoices" SET memo = ? WHERE id = 11', (f"stamp {next(counter)}",))
        return {"ok": True}

    app = dict(LEDGER_APP)
    app["tools"] = list(LEDGER_APP["tools"]) + [{
        "name": "stamp_memo", "description": "stamp invoice 11", "family": "update", "handler": "test.stamp",
        "parameters": {"type": "object", "properties": {}},
    }]
    env = ledger_env(apps=[app], reference_solution=[{"tool": "stamp_memo"}, PAY_10])
    report = check_admission(env, handlers={**builtin_handlers(), "test.stamp": stamp})
    assert failed(report) == {5}
    assert "some state survives reset" in report.failures[0].reason


def test_report_json_shape() -> None:
    data = check_admission(ledger_env(reference_solution=[])).to_dict()
    assert data["admitted"] is False
    assert {f["condition"] for f in data["failed"]} == {2, 3}
    assert set(data) == {"id", "admitted", "conditions", "failed", "seconds", "searched_calls"}
