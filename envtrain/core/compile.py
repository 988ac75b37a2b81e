"""Compile the condition form to parameterised SQL: one evaluator for every site, nothing ``eval``ed.

Validation happens here too, so an invalid condition (unknown column, unknown operator, a
namespace the site cannot see, an ``$arg`` the tool does not take) fails when the spec loads.

NULL semantics (how an undecidable comparison is treated): against a literal, ``=``/``!=``
are null-safe (``x = null`` tests for null, and a null column differs from ``'closed'``);
against a computed value (another column, an argument, a sub-query) a null value is
undecidable and the clause does not match; order comparisons and ``in`` are false on null;
``not in`` and ``not contains`` are true on a null column. String operators ignore ASCII case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from envtrain.core.condition import Condition, Site
from envtrain.core.errors import SpecError
from envtrain.core.expr import BinOp, Clause, Col, Duration, Expr, Lit, Neg, Ref, SubQuery, unparse_clause
from envtrain.core.schema import EntityInfo, Schema

ISO_SECONDS = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class Param:
    """Where a bound parameter's value comes from when the statement runs."""

    kind: str  # lit | arg | actor | session | now | flag (an optional filter clause is off) | limit | offset
    key: Any = None
    as_json: bool = False  # bind as a JSON array (for "in $arg.ids")


@dataclass(frozen=True)
class Fragment:
    sql: str
    params: tuple[Param, ...] = ()
    args: frozenset[str] = frozenset()  # the $arg names it reads

    def __add__(self, other: "Fragment") -> "Fragment":
        return Fragment(self.sql + other.sql, self.params + other.params, self.args | other.args)


@dataclass(frozen=True)
class Bindings:
    """The namespaces visible to a statement at run time. ``clock`` gives $now, formatted only when read."""

    args: Mapping[str, Any]
    actor: Mapping[str, Any]
    session: Mapping[str, Any]
    clock: Callable[[], str]

    @property
    def now(self) -> str:
        return self.clock()


def bind(params: Sequence[Param], ns: Bindings) -> list[Any]:
    values = []
    append = values.append
    for p in params:
        kind = p.kind
        if kind == "lit":  # already in stored form: compile converts booleans
            append(p.key)
            continue
        if kind == "arg":
            value = ns.args.get(p.key)
        elif kind == "now":
            value = ns.clock()
        elif kind == "flag":  # 1 turns the clause off: every name it reads is absent
            value = int(any(ns.args.get(name) is None for name in p.key))
        elif kind == "actor":
            value = ns.actor.get(p.key)
        elif kind == "limit":  # the tool's page size caps what the agent asks for
            asked = ns.args.get("limit")
            value = min(asked, p.key) if isinstance(asked, int) and asked > 0 else p.key
        elif kind == "offset":
            asked = ns.args.get("offset")
            value = asked if isinstance(asked, int) and asked > 0 else 0
        else:
            value = ns.session.get(p.key)
        if p.as_json:
            value = json.dumps(value if isinstance(value, list) else [value])
        elif isinstance(value, (list, dict)):
            value = json.dumps(value, sort_keys=True)
        elif isinstance(value, bool):
            value = int(value)
        append(value)
    return values


class Compiler:
    """Compiles clauses at one site, for one app (bare entity names) and one tool's parameters."""

    def __init__(
        self, schema: Schema, site: Site, *, app: str | None = None, params: Iterable[str] | None = None,
        required: Iterable[str] = (), root: str = "t0",
    ) -> None:
        self.schema = schema
        self.site = site
        self.app = app
        self.params = None if params is None else frozenset(params)
        self.required = frozenset(required)
        self.root = root  # the outermost row's alias; RETURNING clauses must use the table's own name

    def alias(self, depth: int) -> str:
        return self.root if depth == 0 else f"t{depth}"

    def entity(self, name: str) -> EntityInfo:
        return self.schema.resolve(name, self.app)

    # -- conditions ---------------------------------------------------------------------------

    def count(self, cond: Condition) -> Fragment:
        """``SELECT COUNT(*) FROM entity WHERE scope``: the condition holds if the count meets its cardinality."""
        info = self.entity(cond.entity)
        return Fragment(f'SELECT COUNT(*) FROM "{info.table}" AS t0 WHERE ') + self.where(info, cond.where)

    def where(self, info: EntityInfo, clauses: Sequence[Clause], *, optional_args: bool = False) -> Fragment:
        if not clauses:
            return Fragment("1")
        parts = []
        for clause in clauses:
            frag = self.clause(clause, (info,))
            if optional_args and frag.args - self.required:
                # A read filter naming an absent optional argument filters nothing. Clauses on
                # required arguments stay plain so SQLite can use an index for them.
                frag = Fragment("(? OR ", (Param("flag", tuple(sorted(frag.args))),)) + frag + Fragment(")")
            parts.append(frag)
        out = parts[0]
        for part in parts[1:]:
            out = out + Fragment(" AND ") + part
        return out

    def clause(self, clause: Clause, scopes: tuple[EntityInfo, ...]) -> Fragment:
        try:
            return self._clause(clause, scopes)
        except SpecError as exc:
            if str(exc).startswith("clause "):
                raise
            raise SpecError(f"clause '{unparse_clause(clause)}': {exc}") from None

    def _clause(self, clause: Clause, scopes: tuple[EntityInfo, ...]) -> Fragment:
        info = scopes[-1]
        col = info.column(clause.column)
        lhs = f'{self.alias(len(scopes) - 1)}."{clause.column}"'
        op = clause.op
        if op == "is null":
            return Fragment(f"{lhs} IS NULL")
        if op == "is not null":
            return Fragment(f"{lhs} IS NOT NULL")
        value = clause.value
        if op in ("in", "not in"):
            if isinstance(value, SubQuery) and value.func == "all":
                # x in all(E.c where ..) as a correlated EXISTS: an index lookup, not a scan into a list.
                found = self.exists(value, scopes, lhs)
                return found if op == "in" else Fragment(f"({lhs} IS NULL OR NOT ") + found + Fragment(")")
            rhs = self.collection(value, scopes)
            if op == "in":
                return Fragment(f"{lhs} IN ") + rhs
            return Fragment(f"({lhs} IS NULL OR {lhs} NOT IN ") + rhs + Fragment(")")
        if isinstance(value, Lit) and isinstance(value.value, tuple):
            raise SpecError(f"a list is a value only for 'in' and 'not in', not {op!r}")
        rhs = self.expr(value, scopes)
        if op in ("=", "!="):
            if isinstance(value, Lit):  # a literal: null-safe, so "x = null" tests for null
                return Fragment(f"{lhs} {'IS' if op == '=' else 'IS NOT'} (") + rhs + Fragment(")")
            # A computed value (column, argument, sub-query) that is null is undecidable: no match.
            # Otherwise "manager = one(..)" would match every row without a manager when the lookup finds nothing.
            if op == "=":
                return Fragment(f"{lhs} = (") + rhs + Fragment(")")
            return Fragment("((") + rhs + Fragment(f") IS NOT NULL AND {lhs} IS NOT (") + rhs + Fragment("))")
        if op in ("<", "<=", ">", ">="):
            if col.type in ("boolean", "json"):
                raise SpecError(f"{op!r} does not order a {col.type} column")
            return Fragment(f"{lhs} {op} (") + rhs + Fragment(")")
        if col.type not in ("text", "json", "date", "datetime"):
            raise SpecError(f"{op!r} needs a text column; {clause.column!r} is {col.type}")
        if op in ("contains", "not contains"):
            if col.type == "json":
                test = Fragment(f"EXISTS (SELECT 1 FROM json_each({lhs}) WHERE lower(value) = lower(") + rhs + Fragment("))")
            else:
                test = Fragment(f"instr(lower({lhs}), lower(") + rhs + Fragment(")) > 0")
            if op == "contains":
                return test
            return Fragment(f"({lhs} IS NULL OR NOT ") + test + Fragment(")")
        if op == "starts with":
            return Fragment(f"substr(lower({lhs}), 1, length(") + rhs + Fragment(")) = lower(") + rhs + Fragment(")")
        if op == "ends with":
            return (
                Fragment(f"(length({lhs}) >= length(") + rhs + Fragment(f") AND substr(lower({lhs}), -length(")
                + rhs + Fragment(")) = lower(") + rhs + Fragment("))")
            )
        raise SpecError(f"unknown operator {op!r}")

    def exists(self, sub: SubQuery, scopes: tuple[EntityInfo, ...], lhs: str) -> Fragment:
        info = self.entity(sub.entity)
        assert sub.column is not None
        info.column(sub.column)
        alias = f"t{len(scopes)}"
        frag = Fragment(f'EXISTS (SELECT 1 FROM "{info.table}" AS {alias} WHERE {alias}."{sub.column}" = {lhs}')
        for clause in sub.where:
            frag = frag + Fragment(" AND ") + self.clause(clause, scopes + (info,))
        return frag + Fragment(")")

    def collection(self, value: Expr | None, scopes: tuple[EntityInfo, ...]) -> Fragment:
        if isinstance(value, Lit) and isinstance(value.value, tuple):
            if not value.value:
                return Fragment("(SELECT NULL WHERE 0)")
            marks = ", ".join("?" for _ in value.value)
            return Fragment(f"({marks})", tuple(Param("lit", v) for v in value.value))
        if isinstance(value, SubQuery) and value.func == "all":
            return self.expr(value, scopes, allow_all=True)
        if isinstance(value, Ref) and value.namespace in ("arg", "actor", "session"):
            frag = self.expr(value, scopes)
            return Fragment("(SELECT value FROM json_each(?))", (Param(value.namespace, value.name, as_json=True),), frag.args)
        raise SpecError("'in' takes a list [..], all(entity.column where ..) or a reference to a list")

    # -- expressions --------------------------------------------------------------------------

    def expr(self, node: Expr | None, scopes: tuple[EntityInfo, ...], *, allow_all: bool = False) -> Fragment:
        depth = len(scopes) - 1
        if isinstance(node, Lit):
            if isinstance(node.value, tuple):
                raise SpecError("a list is a value only for 'in' and 'not in'")
            value = int(node.value) if isinstance(node.value, bool) else node.value
            return Fragment("?", (Param("lit", value),))
        if isinstance(node, Ref):
            if node.namespace not in self.site.namespaces:
                visible = ", ".join("$" + n for n in sorted(self.site.namespaces)) or "none"
                raise SpecError(f"${node.namespace} is not visible in a {self.site.value} (visible: {visible})")
            if node.namespace == "now":
                return Fragment("?", (Param("now"),))
            if node.namespace == "was":
                scopes[0].column(node.name)  # the row being updated, before the update
                return Fragment(f'{self.root}."{node.name}"')
            if node.namespace == "arg" and self.params is not None and node.name not in self.params:
                raise SpecError(f"$arg.{node.name} is not a parameter of this tool (parameters: {', '.join(sorted(self.params)) or 'none'})")
            args = frozenset({node.name}) if node.namespace == "arg" else frozenset()
            return Fragment("?", (Param(node.namespace, node.name),), args)
        if isinstance(node, Col):
            if node.outer:
                if depth == 0:
                    raise SpecError(f"^{node.name} refers to an enclosing row, but this clause is not inside a sub-query")
                scopes[depth - 1].column(node.name)
                return Fragment(f'{self.alias(depth - 1)}."{node.name}"')
            scopes[depth].column(node.name)
            return Fragment(f'{self.alias(depth)}."{node.name}"')
        if isinstance(node, Duration):
            raise SpecError(f"a duration ({node.text}) is only added to or subtracted from a date or time")
        if isinstance(node, Neg):
            return Fragment("(-") + self.expr(node.operand, scopes) + Fragment(")")
        if isinstance(node, BinOp):
            if isinstance(node.right, Duration) and node.op in ("+", "-"):
                left = self.expr(node.left, scopes)
                is_date = isinstance(node.left, Col) and scopes[depth - 1 if node.left.outer else depth].column(node.left.name).type == "date"
                func = "date(" if is_date else f"strftime('{ISO_SECONDS}', "
                shift = f"{node.op}{node.right.seconds} seconds"
                return Fragment(func) + left + Fragment(", ?)", (Param("lit", shift),))
            return Fragment("(") + self.expr(node.left, scopes) + Fragment(f" {node.op} ") + self.expr(node.right, scopes) + Fragment(")")
        if isinstance(node, SubQuery):
            if node.func == "all" and not allow_all:
                raise SpecError("all(..) gives a list: use it after 'in' or 'not in'")
            info = self.entity(node.entity)
            alias = f"t{depth + 1}"
            if node.column is not None:
                info.column(node.column)
            inner = (info,)
            where = Fragment("1")
            if node.where:
                parts = [self.clause(c, scopes + inner) for c in node.where]
                where = parts[0]
                for part in parts[1:]:
                    where = where + Fragment(" AND ") + part
            source = f'FROM "{info.table}" AS {alias} WHERE '
            col = f'{alias}."{node.column}"'
            head = {
                "count": "(SELECT COUNT(*) ",
                "sum": f"(SELECT COALESCE(SUM({col}), 0) ",
                "min": f"(SELECT MIN({col}) ",
                "max": f"(SELECT MAX({col}) ",
                "one": f"(SELECT {col} ",
                "all": f"(SELECT {col} ",
            }[node.func]
            tail = f" ORDER BY {alias}.rowid LIMIT 1)" if node.func == "one" else ")"
            return Fragment(head + source) + where + Fragment(tail)
        raise SpecError(f"not an expression: {node!r}")


def batch(fragments: Sequence[Fragment]) -> Fragment:
    """Many counting queries in one statement: one round trip returns every count."""
    if not fragments:
        return Fragment("SELECT 0")
    out = Fragment("SELECT (") + fragments[0] + Fragment(")")
    for frag in fragments[1:]:
        out = out + Fragment(", (") + frag + Fragment(")")
    return out
