"""Operators that split a record's *columns*: summary-to-detail access and evidence dispersion."""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envtrain.scale.model import Binding, Detail, Join, Leaf, LeafRef
from envtrain.scale.operators.base import Operator, PlanError, Work, fresh_name, need_list, need_unique_key


class _P(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SummaryParams(_P):
    summary: tuple[str, ...] = Field(default=(), max_length=3)  # columns kept in the list besides the key


class SummaryToDetail(Operator):
    name = "summary-to-detail access"
    basic = True
    summary = "the list keeps the key and a few summary columns; every other column is read one record at a time by key"
    procedure = "read the summary list, then call get_<detail>(key) for every record and merge the two"
    binding = "the detail view is read by key: later operators can gate it (export, index, per-record keys) or encode it"
    Params = SummaryParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        why = need_list(leaf, work.payloads[leaf.id], 1) or need_unique_key(leaf)
        if why:
            return why
        if len(leaf.columns) < 2:
            return "the view has no column besides its key"
        if any(r[leaf.key] is None for r in work.payloads[leaf.id]):
            return "some rows have no key"
        return None

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        others = [n for n, t in leaf.columns if n != leaf.key]
        texts = [n for n, t in leaf.columns if n != leaf.key and t == "text"]
        keep = rng.choice([0, 1]) if len(others) > 1 else 0
        return {"summary": tuple(texts[:keep] if texts else others[:keep])}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        key = leaf.key or ""
        names = [n for n, _ in leaf.columns]
        unknown = [c for c in params.summary if c not in names or c == key]
        if unknown:
            raise PlanError(f"summary columns {unknown} are not non-key columns of the view ({names})")
        listed = (key,) + tuple(c for c in names if c in params.summary)
        rest = tuple(c for c in names if c not in listed)
        if not rest:
            raise PlanError("nothing would be left for the detail view")
        rows = work.payloads[leaf.id]
        label = work.resource_label(leaf)
        types = dict(leaf.columns)
        summary = work.new_leaf(
            leaf.resource,
            label,
            "summaries",
            "list",
            tuple((c, types[c]) for c in listed),
            [{c: r[c] for c in listed} for r in rows],
            key=key,
            layers=work.copy_layers(leaf, len(rows)),
        )
        detail = work.new_leaf(
            leaf.resource,
            f"{label}_detail",
            "details",
            "key",
            tuple((c, types[c]) for c in (key,) + rest),
            [{c: r[c] for c in (key,) + rest} for r in rows],
            key=key,
        )
        work.split(leaf, Detail(summary=LeafRef(leaf=summary.id), detail=LeafRef(leaf=detail.id), key=key), [summary])


class DisperseParams(_P):
    mode: Literal["columns", "text"] = "columns"
    column: str | None = None  # text mode: the column whose text is split in two


class EvidenceDispersion(Operator):
    name = "evidence dispersion"
    summary = (
        "a record is split across two views sharing its key: some columns in one, the rest in the other "
        "(or a long text split in two halves)"
    )
    procedure = "read both views and join them on the key (concatenating a split text)"
    binding = "the second half is a view of its own: later operators can transform it independently"
    Params = DisperseParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        why = need_list(leaf, work.payloads[leaf.id], 1) or need_unique_key(leaf)
        if why:
            return why
        if any(r[leaf.key] is None for r in work.payloads[leaf.id]):
            return "some rows have no key"
        if len(leaf.columns) < 3 and not _texts(leaf, work.payloads[leaf.id]):
            return "too few columns and no text to split"
        return None

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        texts = _texts(leaf, work.payloads[leaf.id])
        if len(leaf.columns) >= 3 and (not texts or rng.random() < 0.6):
            return {"mode": "columns"}
        return {"mode": "text", "column": rng.choice(texts)}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        key = leaf.key or ""
        rows = work.payloads[leaf.id]
        types = dict(leaf.columns)
        label = work.resource_label(leaf)
        if params.mode == "columns":
            others = [n for n, _ in leaf.columns if n != key]
            if len(others) < 2:
                raise PlanError("column mode needs two columns besides the key")
            cut = (len(others) + 1) // 2
            first, second = (key, *others[:cut]), (key, *others[cut:])
            left_rows = [{c: r[c] for c in first} for r in rows]
            right_rows = [{c: r[c] for c in second} for r in rows]
            concat: tuple = ()
        else:
            column = params.column
            if column not in _texts(leaf, rows):
                raise PlanError(f"text mode needs a text column with text to split; {column!r} is not one")
            head, tail = fresh_name(leaf, f"{column}_part1"), fresh_name(leaf, f"{column}_part2")
            first = tuple(n for n, _ in leaf.columns if n != column) + (head,)
            second = (key, tail)
            types[head] = types[tail] = "text"
            left_rows, right_rows = [], []
            for r in rows:
                a, b = _halves(r[column])
                left_rows.append({**{c: r[c] for c in first if c != head}, head: a})
                right_rows.append({key: r[key], tail: b})
            concat = ((column, head, tail),)
        work.rng("dispersion").shuffle(right_rows)
        left = work.new_leaf(
            leaf.resource,
            label,
            "first half of each record",
            "list",
            tuple((c, types[c]) for c in first),
            left_rows,
            key=key,
            layers=work.copy_layers(leaf, len(rows)),
        )
        right = work.new_leaf(
            leaf.resource,
            f"{label}_more",
            "second half of each record",
            "list",
            tuple((c, types[c]) for c in second),
            right_rows,
            key=key,
        )
        work.split(leaf, Join(left=LeafRef(leaf=left.id), right=LeafRef(leaf=right.id), key=key, concat=concat), [left])


def _texts(leaf: Leaf, rows: list[dict[str, Any]]) -> list[str]:
    return [
        n
        for n, t in leaf.columns
        if t == "text" and n != leaf.key and any(isinstance(r[n], str) and len(r[n]) >= 2 for r in rows)
    ]


def _halves(text: str | None) -> tuple[str | None, str | None]:
    """Two non-empty halves whose concatenation is ``text`` (cut at a line break when there is one)."""
    if text is None:
        return None, None
    if len(text) < 2:
        return text, ""
    lines = text.splitlines(keepends=True)
    if len(lines) >= 2:
        cut = len("".join(lines[: len(lines) // 2]))
    else:
        cut = len(text) // 2
    return text[:cut], text[cut:]


OPERATORS = (SummaryToDetail(), EvidenceDispersion())
