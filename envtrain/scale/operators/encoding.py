"""Operators that change how values are *written* in a view; a decode step above the view says how
to read them back: numeric re-encoding, field references, namespace bridges, external-schema
views and version selection. The view keeps its id, tools and layers; only its columns change.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envtrain.core.io import content_hash
from envtrain.scale.model import Binding, Bridge, Decode, Leaf, LeafRef, Numeric, Refs, Rename, Versions
from envtrain.scale.operators.base import Operator, PlanError, Work, columns_of, fresh_name, need_list, need_unique_key


class _P(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _wrap(work: Work, leaf: Leaf, step: Any) -> None:
    work.replace(leaf.id, Decode(child=LeafRef(leaf=leaf.id), step=step))


def _renamed(leaf: Leaf, old: str, new: str, kind: str) -> tuple:
    return tuple((new, kind) if n == old else (n, t) for n, t in leaf.columns)


class NumericParams(_P):
    column: str
    encoding: Literal["scaled", "hex"] = "scaled"
    factor: int = Field(default=100, ge=2, le=1_000_000)
    offset: int = Field(default=0, ge=-1_000_000, le=1_000_000)


class NumericReencoding(Operator):
    name = "numeric re-encoding"
    basic = True
    summary = "a numeric column is stored scaled and offset (or in hexadecimal); the access doc states the decoding"
    procedure = "decode each value: value = (stored - offset) / factor, or int(stored, 16)"
    Params = NumericParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        if not self._columns(work, leaf):
            return "no numeric column with values"
        return None

    def _columns(self, work: Work, leaf: Leaf) -> list[str]:
        rows = work.payloads[leaf.id]
        return [c for c in columns_of(leaf, "integer", "number") if any(r[c] is not None for r in rows)]

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        column = rng.choice(self._columns(work, leaf))
        integer = leaf.column_type(column) == "integer"
        if integer and rng.random() < 0.4:
            return {"column": column, "encoding": "hex"}
        return {"column": column, "encoding": "scaled", "factor": rng.choice([100, 1000]), "offset": rng.randint(1, 997)}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        column = params.column
        if column not in self._columns(work, leaf):
            raise PlanError(f"{column!r} is not a numeric, non-key column with values (choices: {self._columns(work, leaf)})")
        integer = leaf.column_type(column) == "integer"
        if params.encoding == "hex" and not integer:
            raise PlanError("hexadecimal encodes integers only")
        rows = work.payloads[leaf.id]
        new_rows = []
        for row in rows:
            value = row[column]
            if value is None:
                encoded = None
            elif params.encoding == "hex":
                encoded = hex(value)
            elif integer:
                encoded = value * params.factor + params.offset
            else:
                scaled = round(value * params.factor)
                if scaled / params.factor != value:  # the decoding must give back the very same number
                    raise PlanError(f"{column} value {value} does not scale exactly by {params.factor}")
                encoded = scaled + params.offset
            new_rows.append({**{k: v for k, v in row.items() if k != column}, "__enc": encoded})
        suffix = "hex" if params.encoding == "hex" else f"x{params.factor}"
        name = fresh_name(leaf, f"{column}_{suffix}")
        new_rows = [{(name if k == "__enc" else k): v for k, v in r.items()} for r in new_rows]
        kind = "text" if params.encoding == "hex" else "integer"
        work.update_leaf(leaf, new_rows, columns=_renamed(leaf, column, name, kind))
        _wrap(
            work,
            leaf,
            Numeric(
                column=name,
                field=column,
                encoding=params.encoding,
                factor=params.factor if params.encoding == "scaled" else 1,
                offset=params.offset if params.encoding == "scaled" else 0,
                integer=integer,
            ),
        )


class ColumnParams(_P):
    column: str


class FieldReferences(Operator):
    name = "field references"
    basic = True
    summary = "a text column holds reference ids instead of values; a lookup view read by ref gives each value"
    procedure = "for each distinct reference id, call the lookup by ref and substitute its value"
    binding = "the lookup is a view read by key: later operators can gate or re-encode it"
    Params = ColumnParams

    def _columns(self, work: Work, leaf: Leaf) -> list[str]:
        rows = work.payloads[leaf.id]
        return [c for c in columns_of(leaf, "text") if any(r[c] is not None for r in rows)]

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        return None if self._columns(work, leaf) else "no text column with values"

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        return {"column": rng.choice(self._columns(work, leaf))}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        column = params.column
        if column not in self._columns(work, leaf):
            raise PlanError(f"{column!r} is not a non-key text column with values (choices: {self._columns(work, leaf)})")
        rows = work.payloads[leaf.id]
        values = sorted({r[column] for r in rows if r[column] is not None})
        refs = {v: f"ref-{content_hash([work.salt, leaf.id, v], length=8)}" for v in values}
        name = fresh_name(leaf, f"{column}_ref")
        new_rows = [{(name if k == column else k): (refs.get(v) if k == column else v) for k, v in r.items()} for r in rows]
        lookup_rows = [{"ref": refs[v], "value": v} for v in values]
        work.rng("refs").shuffle(lookup_rows)
        label = work.resource_label(leaf)
        lookup = work.new_leaf(
            leaf.resource,
            f"{label}_{column}_refs",
            f"{column} lookup",
            "key",
            (("ref", "text"), ("value", "text")),
            lookup_rows,
            key="ref",
        )
        work.update_leaf(leaf, new_rows, columns=_renamed(leaf, column, name, "text"))
        _wrap(work, leaf, Refs(column=name, field=column, lookup=LeafRef(leaf=lookup.id)))


class NamespaceBridges(Operator):
    name = "namespace bridges"
    summary = "the view names records by external ids; a mapping view bridges external ids to the record keys"
    procedure = "read the mapping, then replace each external id by the key it maps to"
    binding = "the mapping is a view: later operators can page, shard, export or gate it"

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        why = need_list(leaf, work.payloads[leaf.id], 1) or need_unique_key(leaf)
        if why:
            return why
        if leaf.column_type(leaf.key or "") not in ("integer", "text"):
            return "the key is neither an integer nor text"
        if any(r[leaf.key] is None for r in work.payloads[leaf.id]):
            return "some rows have no key"
        return None

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        key = leaf.key or ""
        rows = work.payloads[leaf.id]
        ext = {repr(r[key]): f"x{content_hash([work.salt, leaf.id, repr(r[key])], length=10)}" for r in rows}
        name = fresh_name(leaf, f"{key}_ext")
        new_rows = [{(name if k == key else k): (ext[repr(v)] if k == key else v) for k, v in r.items()} for r in rows]
        mapping = [{name: ext[repr(r[key])], key: r[key]} for r in rows]
        work.rng("bridge").shuffle(mapping)
        label = work.resource_label(leaf)
        table = work.new_leaf(
            leaf.resource,
            f"{label}_ids",
            f"mapping from {name} to {key}",
            "list",
            ((name, "text"), (key, leaf.column_type(key))),
            mapping,
            key=name,
        )
        work.update_leaf(leaf, new_rows, columns=_renamed(leaf, key, name, "text"), key=name)
        _wrap(work, leaf, Bridge(column=name, field=key, mapping=LeafRef(leaf=table.id)))


class ExternalSchemaViews(Operator):
    name = "external-schema views"
    summary = "the view's columns carry opaque names from an external schema; a schema view maps each column to its field"
    procedure = "read the schema view, then rename every column to the field it maps to"
    binding = "the schema is a view: later operators can page, export or gate it"

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        return None if len(leaf.columns) >= 2 else "the view has a single column"

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        names = [n for n, _ in leaf.columns]
        opaque = {n: f"c_{content_hash([work.salt, leaf.id, n], length=6)}" for n in names}
        if len(set(opaque.values())) != len(opaque):
            raise PlanError("opaque column names collide; retry")
        rows = [{opaque[k]: v for k, v in r.items()} for r in work.payloads[leaf.id]]
        catalog = [{"column": opaque[n], "field": n} for n in names]
        work.rng("schema").shuffle(catalog)
        label = work.resource_label(leaf)
        schema = work.new_leaf(
            leaf.resource,
            f"{label}_schema",
            "external schema",
            "list",
            (("column", "text"), ("field", "text")),
            catalog,
            key="column",
        )
        work.update_leaf(
            leaf, rows, columns=tuple((opaque[n], t) for n, t in leaf.columns), key=opaque[leaf.key] if leaf.key else None
        )
        _wrap(work, leaf, Rename(catalog=LeafRef(leaf=schema.id)))


class VersionParams(_P):
    column: str
    versions: int = Field(default=1, ge=1, le=3)  # superseded revisions per chosen record
    stride: int = Field(default=1, ge=1, le=5)  # every stride-th record gets them


class VersionSelection(Operator):
    name = "version selection"
    summary = "records appear in several revisions with differing values; only the highest revision is authoritative"
    procedure = "group the rows by key and keep, for each key, the row with the highest revision"
    Params = VersionParams

    def _columns(self, work: Work, leaf: Leaf) -> list[str]:
        rows = work.payloads[leaf.id]
        return [c for c in columns_of(leaf, "text", "integer", "number", "boolean") if any(r[c] is not None for r in rows)]

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        why = need_list(leaf, work.payloads[leaf.id], 1) or need_unique_key(leaf)
        if why:
            return why
        return None if self._columns(work, leaf) else "no column whose value can differ between revisions"

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        return {"column": rng.choice(self._columns(work, leaf)), "versions": rng.randint(1, 2), "stride": rng.randint(1, 2)}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        column = params.column
        if column not in self._columns(work, leaf):
            raise PlanError(f"{column!r} cannot carry revisions (choices: {self._columns(work, leaf)})")
        key = leaf.key or ""
        rows = work.payloads[leaf.id]
        revision = fresh_name(leaf, "res_revision")
        kind = leaf.column_type(column)
        others = [r[column] for r in rows if r[column] is not None]
        out = []
        for i, row in enumerate(rows):
            extra = params.versions if i % params.stride == 0 else 0
            versions = [{**row, column: _older(row[column], kind, others, j), revision: j + 1} for j in range(extra)]
            out.extend(versions + [{**row, revision: extra + 1}])
        work.rng("versions").shuffle(out)
        work.update_leaf(leaf, out, columns=leaf.columns + ((revision, "integer"),), unique=False)
        _wrap(work, leaf, Versions(key=key, revision=revision))


def _older(value: Any, kind: str, others: list[Any], j: int) -> Any:
    """A plausible superseded value: another record's value, or a nearby one."""
    if kind == "boolean":
        return None if value is None else not value
    if kind in ("integer", "number"):
        base = value if value is not None else (others[0] if others else 0)
        return base + (j + 1) * (1 if kind == "integer" else 1.5)
    different = [o for o in others if o != value]
    if different:
        return different[j % len(different)]
    return f"{value or ''} (draft {j + 1})"


OPERATORS = (NumericReencoding(), FieldReferences(), NamespaceBridges(), ExternalSchemaViews(), VersionSelection())
