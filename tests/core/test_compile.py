"""Every operator, value form and cardinality of the condition form, counted on a known world."""

from __future__ import annotations

import pytest

from envtrain.core import Condition, Runtime, Site, SpecError
from envtrain.core.compile import Bindings, Compiler, bind
from envtrain.core.condition import parse_cardinality
from envtrain.core.world import World

from ..conftest import ledger_env


@pytest.fixture(scope="module")
def world() -> tuple[Runtime, World]:
    runtime = Runtime(ledger_env())
    return runtime, World.deserialize(runtime.schema, runtime.w0)


def count(world, where, entity="ledger.invoices", site=Site.VERIFIER, args=None, params=None) -> int:
    runtime, w = world
    frag = Compiler(runtime.schema, site, params=params).count(Condition(entity=entity, where=tuple(where)))
    ns = Bindings(args or {}, {"email": "clerk@example.com", "role": "clerk"}, {"region": "EU"}, w.now)
    return w.conn.execute(frag.sql, bind(frag.params, ns)).fetchone()[0]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (["status = 'approved'"], 2),
        (["status != 'approved'"], 2),
        (["memo = null"], 1),                       # '=' is null-safe
        (["memo != null"], 3),
        (["amount < 100"], 1),
        (["amount <= 100"], 2),
        (["amount > 250"], 1),
        (["amount >= 250"], 2),
        (["id in [10, 12, 99]"], 2),
        (["id not in [10, 12]"], 2),
        (["memo not in ['toner']"], 3),             # a null memo is not in the list
        (["memo contains 'q1'"], 2),                # string operators ignore case
        (["memo not contains 'q1'"], 2),            # ... and a null memo does not contain it
        (["memo starts with 'servers'"], 1),
        (["memo ends with 'ORDER'"], 1),
        (["memo is null"], 1),
        (["memo is not null"], 3),
        (["tags contains 'office'"], 2),            # json list membership, not substring
        (["tags contains 'offi'"], 0),
        (["paid = amount"], 1),                     # another column of the row
        (["memo = one(ledger.vendors.name where id = 99)"], 0),   # a lookup that finds nothing matches nothing,
        (["memo != one(ledger.vendors.name where id = 99)"], 0),  # ... even rows whose memo is null
        (["memo != 'toner'"], 3),                   # against a literal, a null memo counts as different
        (["amount > paid * 4"], 3),                 # arithmetic over columns: 100>0, 250>200, 75.5>0
        (["amount >= paid + 100"], 2),
        (["due < $now"], 2),                        # now = 2026-01-10T12:00:00Z
        (["due < $now - 20d"], 1),
        (["due > $now + 30d"], 1),
        (["vendor_id in all(ledger.vendors.id where tier = 'gold')"], 2),
        (["vendor_id not in all(ledger.vendors.id where blocked = true)"], 3),
        (["amount = max(ledger.invoices.amount)"], 1),
        (["amount > sum(ledger.invoices.paid where vendor_id = ^vendor_id)"], 3),   # correlated: 100>50, 250>50, 75.5>0, not 400>400
        (["vendor_id = one(ledger.vendors.id where name = 'Borealis Ltd')"], 1),
        (["id = count(ledger.vendors where id in all(ledger.invoices.vendor_id where status = 'paid')) + 9"], 1),
        (["status = 'approved'", "amount > 80"], 1),  # conjunction
        ([], 4),
    ],
)
def test_operator_semantics(world, where, expected) -> None:
    assert count(world, where) == expected


def test_boolean_and_entity_level(world) -> None:
    assert count(world, ["blocked = true"], entity="ledger.vendors") == 1
    assert count(world, ["tier = null"], entity="ledger.vendors") == 1


def test_namespaces_bind_at_run_time(world) -> None:
    params = ["invoice_id", "ids", "status"]
    assert count(world, ["id = $arg.invoice_id"], site=Site.PRECONDITION, args={"invoice_id": 12}, params=params) == 1
    assert count(world, ["id in $arg.ids"], site=Site.PRECONDITION, args={"ids": [10, 11, 42]}, params=params) == 2
    assert count(world, ["memo != $actor.email"], site=Site.PRECONDITION, params=params) == 4  # a null memo differs from a known value
    assert count(world, ["memo = $arg.status"], site=Site.PRECONDITION, params=params) == 0  # absent argument matches nothing
    assert count(world, ["status = 'draft'", "memo = $session.region"], site=Site.PRECONDITION, params=params) == 0


def test_read_filter_drops_clauses_on_absent_arguments(world) -> None:
    runtime, w = world
    info = runtime.schema.resolve("ledger.invoices")
    comp = Compiler(runtime.schema, Site.READ_FILTER, params=["status"])
    where = comp.where(info, tuple(Condition(entity="x", where=("status = $arg.status",)).where), optional_args=True)
    sql = f'SELECT COUNT(*) FROM "{info.table}" AS t0 WHERE ' + where.sql
    for args, expected in (({}, 4), ({"status": "paid"}, 1)):
        ns = Bindings(args, {}, {}, w.now)
        assert w.conn.execute(sql, bind(where.params, ns)).fetchone()[0] == expected


@pytest.mark.parametrize(
    ("where", "site", "message"),
    [
        (["stat = 'x'"], Site.VERIFIER, "clause 'stat = 'x'': unknown column 'stat' in entity 'ledger.invoices'"),
        (["id = $arg.invoice_id"], Site.VERIFIER, "$arg is not visible in a verifier"),
        (["id = $actor.id"], Site.CONSTRAINT, "$actor is not visible in a entity constraint"),
        (["paid = $was.paid"], Site.PRECONDITION, "$was is not visible in a precondition"),
        (["id = $arg.nope"], Site.PRECONDITION, "$arg.nope is not a parameter of this tool"),
        (["memo contains 1", "amount contains 'x'"], Site.VERIFIER, "needs a text column; 'amount' is number"),
        (["tags > 1"], Site.VERIFIER, "does not order a json column"),
        (["id = ^id"], Site.VERIFIER, "not inside a sub-query"),
        (["id = 3d"], Site.VERIFIER, "only added to or subtracted from"),
        (["id = all(ledger.vendors.id)"], Site.VERIFIER, "use it after 'in'"),
        (["id in 3"], Site.VERIFIER, "'in' takes a list"),
        (["id = [1, 2]"], Site.VERIFIER, "only for 'in' and 'not in'"),
        (["id in all(ledger.nope.id)"], Site.VERIFIER, "unknown entity 'ledger.nope'"),
        (["id in all(ledger.vendors.nope)"], Site.VERIFIER, "unknown column 'nope' in entity 'ledger.vendors'"),
    ],
)
def test_invalid_conditions_name_the_clause(world, where, site, message) -> None:
    with pytest.raises(SpecError) as info:
        count(world, where, site=site, params=["invoice_id"])
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "n", "truth"),
    [(">= 1", 1, True), ("exists", 0, False), ("not exists", 0, True), ("= 2", 2, True), ("!= 2", 2, False),
     ("<= 3", 4, False), ("< 1", 0, True), ("> 0", 0, False), ("≥ 2", 3, True), ("≠ 0", 1, True)],
)
def test_cardinalities(text, n, truth) -> None:
    assert parse_cardinality(text).holds(n) is truth


def test_bad_cardinality() -> None:
    with pytest.raises(SpecError, match="bad cardinality"):
        parse_cardinality("about 3")


def test_values_are_bound_not_spliced(world) -> None:
    """A hostile literal is data, never SQL."""
    hostile = "x'); DROP TABLE \"ledger__invoices\"; --"
    assert count(world, [f"memo = '{hostile.replace(chr(39), chr(92) + chr(39))}'"]) == 0
    assert count(world, []) == 4
