"""World snapshots and hashes; sessions: steps, structured errors, rollback, independence."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envtrain.core import ErrorKind, Runtime, SpecError
from envtrain.core.world import World

from ..conftest import LEDGER_ROWS, ledger_env


def test_snapshot_restore_and_hash(ledger: Runtime) -> None:
    world = World.deserialize(ledger.schema, ledger.w0)
    assert world.content_hash() == ledger.w0_hash
    world.conn.execute('UPDATE "ledger__invoices" SET memo = ? WHERE id = 11', ("changed",))
    changed = world.content_hash()
    assert changed != ledger.w0_hash
    world.restore(ledger.w0)
    assert world.content_hash() == ledger.w0_hash
    assert world.rows("ledger.invoices")[0]["tags"] == ["office", "paper"]  # json round trip
    assert world.rows("ledger.vendors")[1]["blocked"] is True  # boolean round trip


def test_hash_ignores_the_clock_and_insertion_order(ledger: Runtime) -> None:
    reordered = dict(LEDGER_ROWS)
    reordered["ledger.invoices"] = list(reversed(LEDGER_ROWS["ledger.invoices"]))
    other = Runtime(ledger_env(world={"base_time": "2030-06-01T00:00:00Z", "tables": reordered}))
    assert other.w0_hash == ledger.w0_hash


def test_clock_is_base_time_plus_action_index(ledger: Runtime) -> None:
    with ledger.session() as s:
        s.reset()
        assert s.world.now() == "2026-01-10T12:00:00Z"
        s.step({"tool": "list_invoices", "arguments": {}})
        s.step({"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 5}})
        assert s.world.rows("ledger.invoices")[0]["updated_at"] == "2026-01-10T12:00:01Z"
        assert s.world.now() == "2026-01-10T12:00:02Z"
        s.reset()
        assert s.world.now() == "2026-01-10T12:00:00Z"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": 20, "vendor_id": 1, "amount": "lots"}, "expected number, got 'lots'"),
        ({"id": 20, "vendor_id": 1, "amount": 1, "due": "01/02/2026"}, "expected date"),
        ({"id": 20, "vendor_id": 1, "amount": 1, "colour": "red"}, "unknown columns ['colour']"),
        ({"id": 10, "vendor_id": 1, "amount": 1}, "ledger.invoices.id must be unique"),
        ({"id": 20, "vendor_id": 1, "amount": 1, "status": "lost"}, "ledger.invoices.status must be one of: draft, approved, paid"),
        ({"id": 20, "vendor_id": 1}, "ledger.invoices.amount is required"),
        ({"id": 20, "vendor_id": 9, "amount": 1}, "refers to a ledger.vendors that is not in the world"),
    ],
)
def test_bad_world_rows_name_the_field(row, message) -> None:
    tables = dict(LEDGER_ROWS)
    tables["ledger.invoices"] = LEDGER_ROWS["ledger.invoices"] + [row]
    with pytest.raises(SpecError) as info:
        Runtime(ledger_env(world={"tables": tables}))
    assert message in str(info.value)
    assert "ledger.invoices" in str(info.value)


def test_write_and_read(ledger: Runtime) -> None:
    with ledger.session() as s:
        s.reset()
        r = s.step({"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 40}})
        assert r.ok and r.status == 200
        assert r.output["updated"] == 1 and r.output["items"][0]["paid"] == 40
        r = s.step({"tool": "list_invoices", "arguments": {"status": "approved", "limit": 1}})
        assert [i["id"] for i in r.output["items"]] == [10] and r.output["next_offset"] == 1
        r = s.step({"tool": "list_invoices", "arguments": {"status": "approved", "offset": 1}})
        assert [i["id"] for i in r.output["items"]] == [12] and r.output["next_offset"] is None
        r = s.step({"tool": "list_invoices", "arguments": {}})
        assert [i["id"] for i in r.output["items"]] == [10, 11, 12, 13]
        r = s.step({"tool": "create_invoice", "arguments": {"vendor_id": 3, "amount": 9.5}})
        assert r.output["created"]["id"] == 14 and r.output["created"]["status"] == "draft"


@pytest.mark.parametrize(
    ("call", "kind", "fragment"),
    [
        ({"tool": "nope"}, ErrorKind.UNKNOWN_TOOL, "unknown tool 'nope'"),
        ({"tool": "pay_invoice", "arguments": {"invoice_id": 10}}, ErrorKind.MISSING_FIELD, "'amount'"),
        ({"tool": "pay_invoice", "arguments": {"invoice_id": "ten", "amount": 1}}, ErrorKind.MALFORMED_ARGUMENTS, "'invoice_id' must be integer"),
        ({"tool": "pay_invoice", "arguments": "{not json"}, ErrorKind.MALFORMED_ARGUMENTS, "not valid JSON"),
        ({"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 1, "x": 1}}, ErrorKind.MALFORMED_ARGUMENTS, "unknown argument 'x'"),
        ({"tool": "pay_invoice", "arguments": {"invoice_id": 99, "amount": 1}}, ErrorKind.NOT_FOUND, "No invoice 99."),
        ({"tool": "pay_invoice", "arguments": {"invoice_id": 11, "amount": 1}}, ErrorKind.INVALID_TRANSITION, "Invoice 11 is not approved."),
        ({"tool": "pay_invoice", "arguments": {"invoice_id": 12, "amount": 1}}, ErrorKind.PERMISSION_DENIED, "vendor of invoice 12 is blocked"),
        ({"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 500}}, ErrorKind.CONSTRAINT_VIOLATION, "paid exceeds the amount"),
        ({"tool": "create_invoice", "arguments": {"vendor_id": 77, "amount": 1}}, ErrorKind.CONSTRAINT_VIOLATION, "ledger.invoices.vendor_id must name an existing ledger.vendors.id"),
        (["not", "a", "call"], ErrorKind.MALFORMED_ARGUMENTS, "a tool call is an object"),
    ],
)
def test_structured_errors_leave_the_world_unchanged(ledger: Runtime, call, kind, fragment) -> None:
    with ledger.session() as s:
        s.reset()
        r = s.step(call)
        assert not r.ok and r.error is kind and fragment in r.message
        assert r.status == kind.status and 400 <= r.status < 500
        assert json.loads(r.content())["error"]["kind"] == kind.value
        assert s.world.content_hash() == ledger.w0_hash


def test_unobserved_steps_act_as_observed_ones(ledger: Runtime) -> None:
    """``observe=False`` (admission's replays) skips shaping read rows, nothing else: every step
    succeeds or fails alike and both sessions reach the same world."""
    calls = [
        {"tool": "list_invoices", "arguments": {"status": "approved"}},
        {"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 40}},
        {"tool": "pay_invoice", "arguments": {"invoice_id": 99, "amount": 1}},
        {"tool": "list_invoices", "arguments": {"limit": "x"}},
        {"tool": "create_invoice", "arguments": {"vendor_id": 3, "amount": 9.5}},
    ]
    with ledger.session() as seen, ledger.session() as unseen:
        seen.reset(), unseen.reset()
        for call in calls:
            a, b = seen.step(call), unseen.step(call, observe=False)
            assert (a.ok, a.error, a.message) == (b.ok, b.error, b.message)
            if call["tool"] == "list_invoices" and a.ok:
                assert a.output["items"] and b.output is None
            elif a.ok:
                assert b.output == a.output  # a write still reports what it wrote
        assert seen.world.content_hash() == unseen.world.content_hash()


def test_equal_images_are_equal_worlds(ledger: Runtime) -> None:
    with ledger.session() as s:
        s.reset()
        assert s.world.image() == ledger.w0  # a restored world, untouched, is W0's very image
        s.step({"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 40}})
        assert s.world.image() != ledger.w0 and s.world.content_hash() != ledger.w0_hash


def test_optional_reference_may_be_null() -> None:
    """A ref column that is not required accepts null, and still refuses a dangling value."""
    from envtrain.core import Environment

    env = Environment.parse({
        "apps": ["helpdesk"], "request": "r", "persona": {"email": "a@x.test"},
        "world": {"tables": {"helpdesk.agents": [{"email": "a@x.test", "name": "A", "team": "tier1"}]}},
        "verifier": {"positive": [{"entity": "helpdesk.tickets"}]},
        "reference_solution": [{"tool": "create_ticket", "arguments": {"subject": "s", "customer": "c@x.test"}}],
    })
    with Runtime(env).session() as s:
        s.reset()
        created = s.step({"tool": "create_ticket", "arguments": {"subject": "s", "customer": "c@x.test"}})
        assert created.ok and created.output["created"]["assignee"] is None
        dangling = s.step({"tool": "assign_ticket", "arguments": {"ticket_id": 1, "assignee": "ghost@x.test"}})
        assert dangling.error is ErrorKind.NOT_FOUND and "No active agent ghost@x.test." == dangling.message


def test_openai_call_format(ledger: Runtime) -> None:
    with ledger.session() as s:
        s.reset()
        r = s.step({"id": "call_1", "type": "function", "function": {"name": "pay_invoice", "arguments": '{"invoice_id": 10, "amount": 1}'}})
        assert r.ok


def test_reset_returns_request_and_openai_tools(ledger: Runtime) -> None:
    with ledger.session() as s:
        obs = s.reset()
    assert obs.request == "Pay invoice 10 in full."
    assert [t["function"]["name"] for t in obs.tools] == ["list_invoices", "pay_invoice", "create_invoice"]
    assert obs.tools[1]["type"] == "function" and obs.tools[1]["function"]["parameters"]["required"] == ["invoice_id", "amount"]


def test_verify_scores(ledger: Runtime) -> None:
    with ledger.session() as s:
        s.reset()
        before = s.verify()
        assert (before.passed, before.score) == (False, 0.5)
        s.step({"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100}})
        after = s.verify()
        assert (after.passed, after.score) == (True, 1.0)
        assert [(a.polarity, a.holds, a.count) for a in after.assertions] == [("+", True, 1), ("-", True, 4)]


def test_sessions_share_nothing(ledger: Runtime) -> None:
    """Eight sessions in threads, each paying a different amount, each sees only its own writes."""
    results: dict[int, float] = {}

    def run(k: int) -> None:
        with ledger.session() as s:
            s.reset()
            for _ in range(20):
                s.step({"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": k / 100}})
            results[k] = s.world.rows("ledger.invoices")[0]["paid"]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: pytest.approx(20 * k / 100) for k in range(1, 9)}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["pay_invoice", "create_invoice", "list_invoices", "bogus", ""]),
    st.one_of(st.dictionaries(st.sampled_from(["invoice_id", "amount", "vendor_id", "memo", "status", "limit", "x"]), json_values, max_size=4),
              json_values, st.text(max_size=20)),
)
def test_fuzzed_calls_never_raise_and_never_corrupt(tool, arguments) -> None:
    runtime = _FUZZ_RUNTIME
    with runtime.session() as s:
        s.reset()
        r = s.step({"tool": tool, "arguments": arguments})
        assert r.ok or r.error is not None
        assert r.error is not ErrorKind.INTERNAL, r.message
        json.loads(r.content())
        if not r.ok:
            assert s.world.content_hash() == runtime.w0_hash


_FUZZ_RUNTIME = Runtime(ledger_env())


def test_json_statements_survive_resets() -> None:
    """Regression: SQLite 3.40 segfaulted when json_each statements met an in-place deserialize.

    Runs in a subprocess so a crash fails this test instead of killing the test run.
    """
    import subprocess
    import sys

    code = """
from envtrain.core import Environment, Runtime
app = {"name": "m", "description": "mail", "entities": {
    "contacts": {"primary_key": "email", "columns": {"email": {"type": "text"}, "blocked": {"type": "boolean"}}},
    "messages": {"columns": {"id": {"type": "integer"}, "to": {"type": "json"}}}},
  "tools": [{"name": "send", "description": "send", "family": "send",
    "parameters": {"type": "object", "properties": {"to": {"type": "array", "items": {"type": "string"}}}, "required": ["to"]},
    "preconditions": [{"entity": "contacts", "where": ["email in $arg.to", "blocked = true"], "count": "= 0",
                       "error": "permission_denied", "message": "blocked"}],
    "effects": [{"kind": "send", "entity": "messages", "values": {"to": "$arg.to"}}]}]}
env = Environment.parse({"apps": [app], "request": "r",
  "world": {"tables": {"m.contacts": [{"email": "a@x", "blocked": False}, {"email": "b@x", "blocked": True}],
                       "m.messages": [{"id": 1, "to": ["a@x"]}]}},
  "verifier": {"positive": [{"entity": "m.messages", "where": ["to contains 'a@x'"], "count": ">= 2"}]},
  "reference_solution": [{"tool": "send", "arguments": {"to": ["a@x"]}}]})
rt = Runtime(env)
s = rt.session()
for _ in range(20):
    s.reset(); s.verify(); s.reset()
    assert s.step({"tool": "send", "arguments": {"to": ["a@x"]}}).ok
    assert s.step({"tool": "send", "arguments": {"to": ["b@x"]}}).message == "blocked"
    assert s.verify().passed
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
