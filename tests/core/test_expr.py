"""The condition text syntax: canonical round trips, clear errors, and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envtrain.core.errors import SpecError
from envtrain.core.expr import (
    OPERATORS, BinOp, Clause, Col, Duration, Lit, Neg, Ref, SubQuery, parse_clause, parse_expr, unparse_clause,
)

CASES = {
    "status = 'approved'": Clause("status", "=", Lit("approved")),
    "invoice = $arg.id": Clause("invoice", "=", Ref("arg", "id")),
    "due < $now - 3d": Clause("due", "<", BinOp("-", Ref("now", None), Duration(259200, "3d"))),
    "amount > (limit * 2) + 10": Clause("amount", ">", BinOp("+", BinOp("*", Col("limit"), Lit(2)), Lit(10))),
    "owner in all(crm.accounts.id where tier = 'gold')":
        Clause("owner", "in", SubQuery("all", "crm.accounts", "id", (Clause("tier", "=", Lit("gold")),))),
    "id not in all(links.invoice where invoice = ^id)":
        Clause("id", "not in", SubQuery("all", "links", "invoice", (Clause("invoice", "=", Col("id", outer=True)),))),
    "note is not null": Clause("note", "is not null", None),
    "x in [1, -2.5, 'a', null, true]": Clause("x", "in", Lit((1, -2.5, "a", None, True))),
    "balance = $was.balance - $arg.amount": Clause("balance", "=", BinOp("-", Ref("was", "balance"), Ref("arg", "amount"))),
    "name starts with 'O\\'Brien'": Clause("name", "starts with", Lit("O'Brien")),
    "x = -(a + b)": Clause("x", "=", Neg(BinOp("+", Col("a"), Col("b")))),
}


@pytest.mark.parametrize("text", sorted(CASES))
def test_parse_gives_the_tree_and_unparse_gives_the_text(text: str) -> None:
    assert parse_clause(text) == CASES[text]
    assert unparse_clause(CASES[text]) == text


def test_spacing_and_unicode_operators_normalise() -> None:
    assert unparse_clause(parse_clause("  amount≥10   ")) == "amount >= 10"
    assert unparse_clause(parse_clause("a≠b")) == "a != b"
    assert unparse_clause(parse_clause("a <> 'x'")) == "a != 'x'"


def test_all_fourteen_operators_parse() -> None:
    assert len(OPERATORS) == 14
    for op in OPERATORS:
        text = f"col {op}" if "null" in op else f"col {op} 1"
        assert parse_clause(text).op == op


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x == 1", "expected a value"),
        ("x like 1", "unknown operator 'like'"),
        ("x = $bogus.y", "unknown namespace $bogus"),
        ("x = $arg", "$arg needs a field"),
        ("x = $now.day", "$now takes no field"),
        ("x = count(a where b = count(c where d = count(e)))", "nest at most 2 deep"),
        ("x = sum(invoices)", "needs entity.column"),
        ("x = 'open", "unexpected character"),
        ("x = [1, $arg.y]", "expected a literal"),
        ("in = 3", "starts with a column name"),
        ("x = 1 2", "unexpected '2'"),
    ],
)
def test_bad_clauses_are_rejected_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=None) as info:
        parse_clause(text)
    assert message in str(info.value)


def test_expression_for_effects() -> None:
    assert parse_expr("'escalated'") == Lit("escalated")
    assert parse_expr("$was.stock + $arg.delta") == BinOp("+", Ref("was", "stock"), Ref("arg", "delta"))


# --- fuzzing -------------------------------------------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda n: n not in {"and", "where", "in", "not", "contains", "starts", "ends", "with", "is", "null", "true", "false",
                        "count", "sum", "min", "max", "one", "all"})
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32), st.text(max_size=8),
)
leaves = st.one_of(
    scalars.map(Lit),
    names.map(Col),
    names.map(lambda n: Col(n, outer=True)),
    st.sampled_from(["arg", "actor", "session", "was"]).flatmap(lambda ns: names.map(lambda n: Ref(ns, n))),
    st.just(Ref("now", None)),
)


def exprs(depth: int):
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.tuples(st.sampled_from("+-*/"), inner, inner).map(lambda t: BinOp(*t)),
            inner.filter(lambda n: not (isinstance(n, Lit) and type(n.value) in (int, float))).map(Neg),
        ),
        max_leaves=6,
    )


def clauses(depth: int = 0):
    values = exprs(depth)
    if depth < 2:
        sub = st.tuples(st.sampled_from(["count", "sum", "one", "min"]), names, names,
                        st.lists(clauses(depth + 1), max_size=2)).map(
            lambda t: SubQuery(t[0], t[1], None if t[0] == "count" else t[2], tuple(t[3])))
        values = st.one_of(values, sub)
    binary = st.tuples(names, st.sampled_from([o for o in OPERATORS if "null" not in o and "in" != o[-2:]]), values)
    return st.one_of(
        binary.map(lambda t: Clause(*t)),
        st.tuples(names, st.sampled_from(["is null", "is not null"])).map(lambda t: Clause(t[0], t[1], None)),
        st.tuples(names, st.sampled_from(["in", "not in"]), st.lists(scalars, max_size=3)).map(
            lambda t: Clause(t[0], t[1], Lit(tuple(t[2])))),
    )


@settings(max_examples=300, deadline=None)
@given(clauses())
def test_unparse_then_parse_is_identity(clause: Clause) -> None:
    assert parse_clause(unparse_clause(clause)) == clause


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(list("ab_$.'()[],=<>!+-*/^ 0129dxyin") + [" and ", " not ", " is ", "null", "count(", " where "]), max_size=25).map("".join))
def test_any_text_parses_or_raises_spec_error(text: str) -> None:
    try:
        clause = parse_clause(text)
    except SpecError:
        return
    assert parse_clause(unparse_clause(clause)) == clause
