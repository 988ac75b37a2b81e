"""Which original resources an environment offers to scaling, and what their records are.

A resource is an original entity together with every public tool that reads it (family read,
list or search), or the workspace files with the workspace's read tools. Its **records** are
what those tools can reveal: the rows at least one tool can reach (the tool's filter clauses
that need no argument, evaluated for the persona), projected to the union of the fields the
tools return. Scaling removes all of those tools at once, so the records are exactly what must
be restorable through the new access path, no more (nothing the original hid is exposed) and no
less.

An entity is left alone when one of its read tools guards rows by the actor in a precondition
(a private channel, say): which rows such a tool reveals depends on arguments, so its records
cannot be stated without exposing what it hides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from envtrain.core.app import Tool
from envtrain.core.compile import Bindings, Compiler, bind
from envtrain.core.condition import Site
from envtrain.core.env import Environment
from envtrain.core.expr import Ref, walk
from envtrain.core.io import content_hash
from envtrain.core.schema import FILES
from envtrain.core.world import World, from_sql
from envtrain.scale.model import APP, ColumnType, Registry

READ_FAMILIES = ("read", "list", "search")
FILE_READ_HANDLERS = ("files.read", "files.list", "files.search")
FILE_FIELDS: tuple[tuple[str, ColumnType], ...] = (("path", "text"), ("content", "text"))


@dataclass(frozen=True)
class Original:
    """An untouched resource: its read tools, fields, scope and records (in key order)."""

    key: str
    label: str
    entity: str
    tools: tuple[str, ...]
    fields: tuple[tuple[str, ColumnType], ...]
    record_key: str | None
    scope: tuple[Any, ...] | None
    records: tuple[dict[str, Any], ...]
    needed: bool

    @cached_property
    def canonical(self) -> list[str]:
        """Each record's canonical form (hashed here, compared again by validation's records check)."""
        return canonical_records(self.records, self.fields)

    @property
    def records_hash(self) -> str:
        return content_hash(sorted(self.canonical))


def normalize(value: Any, kind: str) -> Any:
    """One form per value so records compare across storage and tool output (REAL 4250 is 4250.0)."""
    if value is None:
        return None
    if kind == "number":
        return float(value)
    if kind == "boolean":
        return bool(value)
    return value


_ENCODE = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode  # json.dumps(..., sort_keys=True, ensure_ascii=False)


def canonical_record(row: dict[str, Any], fields: tuple[tuple[str, ColumnType], ...]) -> str:
    return _ENCODE({n: normalize(row.get(n), t) for n, t in fields})


def canonical_records(rows: Any, fields: tuple[tuple[str, ColumnType], ...]) -> list[str]:
    """``canonical_record`` of each row (validation hashes and compares the same strings)."""
    return [_ENCODE({n: normalize(row.get(n), t) for n, t in fields}) for row in rows]


def records_hash(records: Any, fields: tuple[tuple[str, ColumnType], ...]) -> str:
    return content_hash(sorted(canonical_records(records, fields)))


def _reads(tool: Tool, namespaces: set[str], clauses) -> bool:
    return any(isinstance(n, Ref) and n.namespace in namespaces for c in clauses for n in walk(c))


def original_resources(env: Environment, world: World, registry: Registry | None = None) -> dict[str, Original]:
    """Every resource of ``env`` that is still read through its original tools and can be scaled."""
    touched = {r.key for r in registry.resources} if registry else set()
    groups: dict[str, list[tuple[str, Tool]]] = {}
    for app in env.apps:
        if app.name == APP:
            continue
        for tool in app.tools:
            if tool.family not in READ_FAMILIES:
                continue
            if tool.handler is not None:
                key = FILES if tool.handler in FILE_READ_HANDLERS else f"handler:{tool.handler}"
            else:
                key = world.schema.resolve(tool.entity or "", app.name).name
            groups.setdefault(key, []).append((app.name, tool))
    solution = registry.original_solution if registry else env.reference_solution
    used = {call.tool for call in solution}
    verified = {a.entity for a in env.verifier.positive + env.verifier.negative}
    shorts = [k.split(".")[-1] for k in groups]
    out: dict[str, Original] = {}
    for key, tools in sorted(groups.items()):
        if key in touched or key.startswith("handler:"):
            continue
        names = tuple(t.name for _, t in tools)
        needed = bool(used & set(names)) or key in verified
        short = key.split(".")[-1]
        label = short if shorts.count(short) == 1 else key.replace(".", "_")
        if key == FILES:
            files = world.files()
            if not files:
                continue
            records = tuple({"path": p, "content": c} for p, c in sorted(files.items()))
            out[key] = Original(key, label, FILES, names, FILE_FIELDS, "path", None, records, needed)
            continue
        original = _table_resource(env, world, key, label, tools, needed)
        if original is not None:
            out[key] = original
    return out


def _table_resource(env: Environment, world: World, key: str, label: str, tools, needed: bool) -> Original | None:
    info = world.schema.resolve(key)
    for _, tool in tools:
        # Rows revealed per argument behind an actor guard cannot be stated without exposing them.
        if any(_reads(tool, {"actor", "session"}, g.where) for g in tool.preconditions + tool.postconditions):
            return None
    names = set()
    scope_sql = []
    params: list[Any] = []
    ns = Bindings({}, dict(env.persona), dict(env.world.session), world.now)
    for app_name, tool in tools:
        names.update(tool.returns.fields or info.columns)
        fixed = tuple(c for c in tool.where if not _reads(tool, {"arg"}, [c]))
        if fixed:
            frag = Compiler(world.schema, Site.READ_FILTER, app=app_name, params=()).where(info, fixed)
            scope_sql.append(f"({frag.sql})")
            params.extend(bind(frag.params, ns))
        else:
            scope_sql.append("1")
    # By name, not by declaration: a document's id does not depend on the order its columns are
    # written in (a YAML root and its saved JSON share an id), so neither may Apply.
    fields = tuple(sorted((n, c.type) for n, c in info.columns.items() if n in names))
    pk = info.spec.primary_key
    where = " OR ".join(scope_sql)
    keys = [
        r[0] for r in world.conn.execute(f'SELECT t0."{pk}" FROM "{info.table}" AS t0 WHERE {where} ORDER BY t0."{pk}"', params)
    ]
    if not keys:
        return None
    total = world.conn.execute(f'SELECT COUNT(*) FROM "{info.table}"').fetchone()[0]
    scope = None if len(keys) == total else tuple(keys)
    rows = {r[pk]: r for r in world.rows(key)}
    records = tuple({n: rows[k][n] for n, _ in fields} for k in keys)
    record_key = pk if pk in names else None
    return Original(key, label, key, tuple(t.name for _, t in tools), fields, record_key, scope, records, needed)


def current_records(env: Environment, world: World, resource) -> list[dict[str, Any]]:
    """The records of a transformed resource, recomputed from the (unchanged) original rows."""
    fields = resource.fields
    if resource.entity == FILES:
        return [{"path": p, "content": c} for p, c in sorted(world.files().items())]
    info = world.schema.resolve(resource.entity)
    pk = info.spec.primary_key
    # Only the record's fields (and the key, for the scope) are read and decoded: a wide table's
    # other columns would cost more than the records themselves.
    names = [n for n, _ in fields]
    read = names if pk in names else [pk, *names]
    columns = [info.columns[n] for n in read]
    quoted = ", ".join(f'"{n}"' for n in read)
    cursor = world.conn.execute(f'SELECT {quoted} FROM "{info.table}" ORDER BY "{pk}"')
    rows = [{n: from_sql(v, c) for n, v, c in zip(read, row, columns)} for row in cursor]
    if resource.scope is not None:
        wanted = set(resource.scope)
        rows = [r for r in rows if r[pk] in wanted]
    return [{n: r[n] for n in names} for r in rows]
