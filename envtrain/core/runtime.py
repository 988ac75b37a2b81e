"""One generic runtime serves every app: tools compiled once to SQL, executed against a world.

A write runs as: guards (all preconditions in one query) → effects (``... RETURNING``) →
constraints on the touched rows (one query per effect) → postconditions. Any failure raises a
ToolError; the session rolls the savepoint back, so a refused call leaves the world as it was.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from envtrain.core.app import App, Constraint, Effect, Guard, Tool
from envtrain.core.args import compile_validator
from envtrain.core.compile import Bindings, Compiler, Fragment, Param, batch, bind
from envtrain.core.condition import Cardinality, Condition, Site
from envtrain.core.errors import ErrorKind, SpecError, ToolError
from envtrain.core.expr import Clause, Col, Lit, Ref, SubQuery, walk
from envtrain.core.schema import EntityInfo, Schema
from envtrain.core.world import RowShape, World

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
@dataclass(frozen=True)
class ToolContext:
    """What a Python handler gets: the live world, the call's namespaces and its tool."""

    world: World
    ns: Bindings
    tool: Tool


Handler = Callable[[ToolContext, dict[str, Any]], Any]


@dataclass(frozen=True)
class GuardCheck:
    cardinality: Cardinality
    error: ErrorKind
    message: str
    optional: frozenset[str] = frozenset()  # optional arguments it reads: absent ones switch it off


@dataclass(frozen=True)
class Guards:
    sql: str
    params: tuple[Param, ...]
    checks: tuple[GuardCheck, ...]
    parts: tuple[Fragment, ...] = ()  # each guard's own counting query

    def all_hold(self) -> Fragment:
        """One SQL condition that is true when every guard holds (for folding into a write)."""
        out = Fragment("")
        for i, (part, check) in enumerate(zip(self.parts, self.checks)):
            test = Fragment("((") + part + Fragment(f") {check.cardinality.op} {check.cardinality.n})")
            if check.optional:
                test = Fragment("(? OR ", (Param("flag", tuple(sorted(check.optional))),)) + test + Fragment(")")
            out = out + Fragment(" AND " if i else "") + test
        return out

    def run(self, world: World, ns: Bindings) -> None:
        counts = world.conn.execute(self.sql, bind(self.params, ns)).fetchone()
        for check, count in zip(self.checks, counts):
            if check.optional and any(ns.args.get(name) is None for name in check.optional):
                continue
            if not check.cardinality.holds(count):
                raise ToolError(check.error, format_message(check.message, ns.args))


@dataclass(frozen=True)
class CompiledEffect:
    effect: Effect
    info: EntityInfo
    sql: str  # ... RETURNING rowid, <every column>, <one 0/1 flag per constraint>
    params: tuple[Param, ...]
    shape: RowShape
    messages: tuple[str, ...]  # the constraint each trailing flag checks
    refs: str = ""  # what a foreign-key failure of this statement means


@dataclass(frozen=True)
class CompiledRead:
    sql: str
    params: tuple[Param, ...]
    shape: RowShape


@dataclass(frozen=True)
class CompiledTool:
    tool: Tool
    app: str
    info: EntityInfo | None
    guards: Guards | None
    read: CompiledRead | None
    effects: tuple[CompiledEffect, ...]
    postconditions: Guards | None
    handler: Handler | None
    validate: Callable[[Any], None]  # the tool's argument schema, compiled
    fused: CompiledEffect | None = None  # the single write with its guards folded in: one round trip

    @property
    def atomic(self) -> bool:
        """One write statement and nothing after it: SQLite's statement rollback is enough."""
        return self.handler is None and self.postconditions is None and len(self.effects) == 1 and not self.effects[0].messages

    def run(self, world: World, ns: Bindings, *, observe: bool = True) -> Any:
        """``observe=False``: a plain read still runs (and still refuses what it would refuse), but
        its rows are not turned into output; for callers that only want the world (admission's replays)."""
        if self.fused is not None:
            rows = self._execute(world, ns, self.fused)
            if not rows and self.guards is not None:
                self.guards.run(world, ns)  # the write did nothing: report the guard that refused, if one did
            return self._result(ns, self.fused, rows)
        if self.guards is not None:
            self.guards.run(world, ns)
        if self.handler is not None:
            result = self.handler(ToolContext(world, ns, self.tool), dict(ns.args))
        elif self.read is not None:
            result = self._read(world, ns, observe)
        else:
            result = None
        for i, effect in enumerate(self.effects):
            outcome = self._apply(world, ns, effect)
            if i == 0 and result is None:
                result = outcome
        if self.postconditions is not None:
            self.postconditions.run(world, ns)
        return result

    def _read(self, world: World, ns: Bindings, observe: bool = True) -> Any:
        read = self.read
        assert read is not None and self.info is not None
        values = bind(read.params, ns)
        if self.tool.family == "read":
            row = world.conn.execute(read.sql, values).fetchone()
            if row is None:
                raise ToolError(ErrorKind.NOT_FOUND, f"nothing in {self.info.name.split('.')[-1]} matches {_describe_args(ns.args)}")
            return read.shape.row(row) if observe else None
        # One row more than the page tells whether there is a next page, without counting them all.
        limit, offset = values[-2], values[-1]
        values[-2] = limit + 1
        rows = world.conn.execute(read.sql, values).fetchall()
        if not observe:
            return None
        more = len(rows) > limit
        return {"items": [read.shape.row(r) for r in rows[:limit]], "next_offset": offset + limit if more else None}

    def _apply(self, world: World, ns: Bindings, ce: CompiledEffect) -> Any:
        return self._result(ns, ce, self._execute(world, ns, ce))

    @staticmethod
    def _execute(world: World, ns: Bindings, ce: CompiledEffect) -> list[Any]:
        try:
            return world.conn.execute(ce.sql, bind(ce.params, ns)).fetchall()
        except sqlite3.IntegrityError as exc:  # SQLite undid the statement; say why in the spec's words
            raise ToolError(ErrorKind.CONSTRAINT_VIOLATION, world.schema.integrity_message(str(exc), ce.refs)) from None

    def _result(self, ns: Bindings, ce: CompiledEffect, rows: list[Any]) -> Any:
        kind = ce.effect.kind
        if not rows:
            name = ce.info.name.split(".")[-1]
            if kind == "link":
                raise ToolError(ErrorKind.INVALID_TRANSITION, f"that {name} link already exists")
            if not ce.effect.optional:
                raise ToolError(ErrorKind.NOT_FOUND, f"nothing in {name} matches {_describe_args(ns.args)}")
        if ce.messages:
            width = len(ce.shape.names) + 1
            for row in rows:
                for message, ok in zip(ce.messages, row[width:]):
                    if not ok:
                        raise ToolError(ErrorKind.CONSTRAINT_VIOLATION, message)
        shaped = [_project(ce.shape.row(r[1:]), self.tool.returns.fields) for r in rows]
        if kind == "delete":
            return {"deleted": len(rows)}
        if kind == "update":
            return {"updated": len(rows), "items": shaped}
        return {{"insert": "created", "send": "sent", "link": "linked"}[kind]: shaped[0]}


def _project(row: dict[str, Any], fields: Sequence[str] | None) -> dict[str, Any]:
    return row if fields is None else {f: row[f] for f in fields if f in row}


def _describe_args(args: Mapping[str, Any]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items() if v is not None)
    return f"({shown})" if shown else "the request"


def format_message(template: str, args: Mapping[str, Any]) -> str:
    """Fill ``{name}`` with argument values; nothing else is interpreted (no attribute access)."""
    return _PLACEHOLDER.sub(lambda m: str(args[m.group(1)]) if m.group(1) in args else m.group(0), template)


# --- compilation ----------------------------------------------------------------------------


def compile_guards(
    schema: Schema, guards: Sequence[Guard], site: Site, app: str | None, params: Sequence[str] | None, label: str,
    required: Sequence[str] = (),
) -> Guards | None:
    if not guards:
        return None
    frags = []
    for i, guard in enumerate(guards, 1):
        comp = Compiler(schema, site, app=app, params=params)
        try:
            frags.append(comp.count(Condition(entity=guard.entity, where=guard.where, count=guard.count)))
        except SpecError as exc:
            raise SpecError(f"{label} {site.value} {i}: {exc}") from None
    out = batch(frags)
    checks = tuple(GuardCheck(g.count, g.error, g.message, f.args - frozenset(required)) for g, f in zip(guards, frags))
    return Guards(out.sql, out.params, checks, tuple(frags))


def compile_constraints(schema: Schema, info: EntityInfo, touched: frozenset[str] | None = None) -> list[tuple[Fragment, str]]:
    """The entity's own constraints as 0/1 flags, evaluated in the write's RETURNING clause.

    Column rules (type, required, enum, ref) live in the table itself, where SQLite enforces
    them atomically; these are the rules that need the condition form. An undecidable (NULL)
    check counts as satisfied. ``touched`` (an update's columns) keeps only the rules those
    columns can break.
    """
    comp = Compiler(schema, Site.CONSTRAINT, app=info.app, root=f'"{info.table}"')
    checks: list[tuple[Fragment, str]] = []
    for constraint in info.spec.constraints:
        if touched is not None and not _may_break(constraint, touched):
            continue
        try:
            if constraint.where:
                checks.append((comp.where(info, constraint.where), constraint.message))
            if constraint.forbid:
                # Violated only when every clause decidably matches.
                forbid = Fragment("NOT COALESCE((") + comp.where(info, constraint.forbid) + Fragment("), 0)")
                checks.append((forbid, constraint.message))
        except SpecError as exc:
            raise SpecError(f"entity {info.name}: constraint {constraint.name!r}: {exc}") from None
    return [(Fragment("COALESCE((") + frag + Fragment("), 1)"), message) for frag, message in checks]


def _may_break(constraint: Constraint, touched: frozenset[str]) -> bool:
    """Whether changing ``touched`` columns can change the constraint's truth on a row."""
    for clause in constraint.where + constraint.forbid:
        if clause.column in touched:
            return True
        for node in walk(clause):
            if isinstance(node, SubQuery) or (isinstance(node, Col) and node.name in touched):
                return True
    return False


def _returning(info: EntityInfo, checks: Sequence[tuple[Fragment, str]]) -> Fragment:
    frag = Fragment(" RETURNING rowid, " + ", ".join(f'"{c}"' for c in info.columns))
    for check, _ in checks:
        frag = frag + Fragment(", ") + check
    return frag


def _compile_effect(
    schema: Schema, app: App, tool: Tool, effect: Effect, params: Sequence[str], label: str, require: Fragment | None = None,
) -> CompiledEffect | None:
    """The effect as one statement; with ``require``, the statement writes only when it holds
    (None if the statement has no place for it)."""
    comp = Compiler(schema, Site.EFFECT, app=app.name, params=params)
    info = comp.entity(effect.entity)
    table = f'"{info.table}"'
    shape = RowShape.of(tuple(info.columns.items()))
    touched = frozenset(effect.values) if effect.kind == "update" else None
    checks = compile_constraints(schema, info, touched) if effect.kind != "delete" else []
    returning = _returning(info, checks)
    messages = tuple(m for _, m in checks)
    written = set(info.columns) if touched is None else touched
    refs = " or ".join(info.ref_message(schema, c) for c in info.columns if c in written and info.columns[c].ref)
    if effect.kind == "delete":
        refs = f"other records refer to this {info.name}; remove or reassign them first"
    if effect.kind in ("insert", "link", "send"):
        values = dict(effect.values)
        for name, col in info.columns.items():
            if name not in values and col.default is not None:
                values[name] = col.default
        for name, expr in values.items():
            info.column(name)
            if any(isinstance(n, Col) or (isinstance(n, Ref) and n.namespace == "was") for n in walk(expr)):
                if not any(isinstance(n, SubQuery) for n in walk(expr)):
                    raise SpecError(f"{label}: insert value for {name!r} refers to a column, but a new row has none yet")
        if not values:
            if require is not None:
                return None
            frag = Fragment(f"INSERT INTO {table} DEFAULT VALUES") + returning
            return CompiledEffect(effect, info, frag.sql, frag.params, shape, messages, refs)
        frag = Fragment(f"INSERT INTO {table} ({', '.join(f'{chr(34)}{n}{chr(34)}' for n in values)}) SELECT ")
        for i, (name, expr) in enumerate(values.items()):
            value = comp.expr(expr, (info,))
            default = info.columns[name].default
            if default is not None and expr is not default:
                # An absent optional argument leaves the column to its default, not to null.
                value = Fragment("COALESCE(") + value + Fragment(", ") + comp.expr(default, (info,)) + Fragment(")")
            frag = frag + Fragment(", " if i else "") + value
        if effect.kind == "link":
            # A link that already exists is refused, not doubled; timestamps are not part of its identity.
            identity = {n: e for n, e in effect.values.items() if not any(isinstance(x, Ref) and x.namespace == "now" for x in walk(e))}
            if not identity:
                raise SpecError(f"{label}: a link names at least one value that is not a time")
            frag = frag + Fragment(f" WHERE NOT EXISTS (SELECT 1 FROM {table} AS t0 WHERE ")
            conds = [Fragment(f't0."{n}" IS (') + comp.expr(e, (info,)) + Fragment(")") for n, e in identity.items()]
            for i, c in enumerate(conds):
                frag = frag + Fragment(" AND " if i else "") + c
            frag = frag + Fragment(")")
        if require is not None:
            frag = frag + Fragment(" AND (" if effect.kind == "link" else " WHERE (") + require + Fragment(")")
        frag = frag + returning
        return CompiledEffect(effect, info, frag.sql, frag.params, shape, messages, refs)
    where = comp.where(info, effect.where)
    if require is not None:
        where = Fragment("(") + where + Fragment(") AND (") + require + Fragment(")")
    if effect.kind == "delete":
        frag = Fragment(f"DELETE FROM {table} AS t0 WHERE ") + where + returning
        return CompiledEffect(effect, info, frag.sql, frag.params, shape, messages, refs)
    if not effect.values:
        raise SpecError(f"{label}: an update sets at least one column")
    frag = Fragment(f"UPDATE {table} AS t0 SET ")
    for i, (name, expr) in enumerate(effect.values.items()):
        info.column(name)
        frag = frag + Fragment(f'{", " if i else ""}"{name}" = (') + comp.expr(expr, (info,)) + Fragment(")")
    frag = frag + Fragment(" WHERE ") + where + returning
    return CompiledEffect(effect, info, frag.sql, frag.params, shape, messages, refs)


def _compile_read(schema: Schema, app: App, tool: Tool, params: Sequence[str]) -> tuple[EntityInfo, CompiledRead]:
    comp = Compiler(schema, Site.READ_FILTER, app=app.name, params=params, required=tool.parameters.get("required", ()))
    info = comp.entity(tool.entity or "")
    fields = tool.returns.fields or tuple(info.columns)
    for name in fields:
        info.column(name)
    columns = tuple((name, info.columns[name]) for name in fields)
    select = ", ".join(f't0."{n}"' for n in fields)
    frag = Fragment(f'SELECT {select} FROM "{info.table}" AS t0 WHERE ')
    frag = frag + comp.where(info, tool.where, optional_args=True)
    if tool.search:
        tests = []
        for name in tool.search:
            info.column(name)
            tests.append(f'instr(lower(t0."{name}"), lower(?)) > 0')
        frag = frag + Fragment(" AND (" + " OR ".join(tests) + ")", tuple(Param("arg", "query") for _ in tool.search), frozenset({"query"}))
    if tool.family == "read":
        frag = frag + Fragment(" LIMIT 1")
    else:
        order = tool.returns.order_by or info.spec.primary_key
        column, _, direction = order.partition(" ")
        info.column(column)
        if direction.strip().lower() not in ("", "asc", "desc"):
            raise SpecError(f"order_by {order!r}: the direction is asc or desc")
        frag = frag + Fragment(f' ORDER BY t0."{column}" {direction.strip().upper() or "ASC"}, t0.rowid LIMIT ? OFFSET ?')
        frag = frag + Fragment("", (Param("limit", tool.returns.limit), Param("offset")))
    return info, CompiledRead(frag.sql, frag.params, RowShape.of(columns))


def compile_tool(schema: Schema, app: App, tool: Tool, handlers: Mapping[str, Handler]) -> CompiledTool:
    label = f"app {app.name}: tool {tool.name}"
    params = list(tool.parameters.get("properties", {}))
    try:
        required = tool.parameters.get("required", ())
        guards = compile_guards(schema, tool.preconditions, Site.PRECONDITION, app.name, params, label, required)
        post = compile_guards(schema, tool.postconditions, Site.POSTCONDITION, app.name, params, label, required)
        info, read = (None, None)
        if tool.family in ("read", "list", "search") and tool.entity is not None:
            info, read = _compile_read(schema, app, tool, params)
        effects = tuple(
            _compile_effect(schema, app, tool, e, params, f"{label} effect {i}") for i, e in enumerate(tool.effects, 1)
        )
        fused = None
        if guards is not None and tool.handler is None and post is None and len(effects) == 1:
            fused = _compile_effect(schema, app, tool, tool.effects[0], params, f"{label} effect 1", require=guards.all_hold())
    except SpecError as exc:
        text = str(exc)
        raise SpecError(text if text.startswith(label) else f"{label}: {text}") from None
    handler = None
    if tool.handler is not None:
        if tool.handler not in handlers:
            raise SpecError(f"{label}: handler {tool.handler!r} is not registered (registered: {', '.join(sorted(handlers)) or 'none'})")
        handler = handlers[tool.handler]
    return CompiledTool(tool, app.name, info, guards, read, tuple(e for e in effects if e), post, handler,
                        compile_validator(tool.parameters), fused)
