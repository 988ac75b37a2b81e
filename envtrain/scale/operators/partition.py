"""Operators that split a view's rows across several views.

sharding, source routing, archive views and candidate intersection. Each new view inherits the
access layers of the view it came from (fresh tokens and state), so structure built in earlier
rounds is carried into every part; bindings to the old view move to the part that publishes the
same kind of token.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envtrain.core.io import content_hash
from envtrain.scale.model import Archive, Binding, Intersect, Leaf, LeafRef, Parts, Routed
from envtrain.scale.operators.base import Operator, PlanError, Work, chunks, need_list, need_unique_key


class _P(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ShardParams(_P):
    parts: int = Field(ge=2, le=6)
    by: Literal["range", "interleave"] = "range"


class Sharding(Operator):
    name = "sharding"
    basic = True
    summary = "the view's rows are split into parts, each a view of its own (contiguous ranges or interleaved)"
    procedure = "read every part (each with its inherited access steps) and concatenate"
    Params = ShardParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        return need_list(leaf, work.payloads[leaf.id], 2)

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        rows = len(work.payloads[leaf.id])
        return {"parts": rng.randint(2, max(2, min(3, rows))), "by": rng.choice(["range", "interleave"])}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        rows = work.payloads[leaf.id]
        if params.parts > len(rows):
            raise PlanError(f"{params.parts} parts for {len(rows)} rows: a part would be empty")
        if params.by == "range":
            groups = chunks(rows, params.parts)
        else:
            groups = [rows[i :: params.parts] for i in range(params.parts)]
        label = work.resource_label(leaf)
        parts = [
            work.new_leaf(
                leaf.resource,
                label,
                f"shard {i} of {params.parts}",
                "list",
                leaf.columns,
                list(group),
                key=leaf.key,
                unique=leaf.unique,
                layers=work.copy_layers(leaf, len(group)),
            )
            for i, group in enumerate(groups, 1)
        ]
        node = Parts(
            parts=tuple(LeafRef(leaf=p.id) for p in parts),
            labels=tuple(f"shard {i}" for i in range(1, len(parts) + 1)),
            op="sharding",
        )
        work.split(leaf, node, parts)


class RouteParams(_P):
    backends: int = Field(ge=2, le=4)


class SourceRouting(Operator):
    name = "source routing"
    summary = "rows live on backends by key range; a routing table (a view) names each backend and its range"
    procedure = "read the routing table, then every backend it names; check each row's key lies in its backend's range"
    binding = "the routing table is a view: later operators can page, export or gate it"
    Params = RouteParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        why = need_list(leaf, work.payloads[leaf.id], 4) or need_unique_key(leaf)
        if why:
            return why
        if leaf.column_type(leaf.key or "") not in ("integer", "text", "date", "datetime"):
            return "the key does not order"
        if any(r[leaf.key] is None for r in work.payloads[leaf.id]):
            return "some rows have no key"
        return None

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        return {"backends": rng.randint(2, max(2, min(3, len(work.payloads[leaf.id]) // 2)))}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        rows = sorted(work.payloads[leaf.id], key=lambda r: r[leaf.key])
        if params.backends > len(rows):
            raise PlanError(f"{params.backends} backends for {len(rows)} rows")
        label = work.resource_label(leaf)
        names = [f"backend-{chr(97 + i)}" for i in range(params.backends)]
        groups = chunks(rows, params.backends)
        backends = [
            work.new_leaf(
                leaf.resource,
                label,
                f"rows on {name}",
                "list",
                leaf.columns,
                list(group),
                key=leaf.key,
                layers=work.copy_layers(leaf, len(group)),
            )
            for name, group in zip(names, groups)
        ]
        routes = [{"backend": name, "first_key": g[0][leaf.key], "last_key": g[-1][leaf.key]} for name, g in zip(names, groups)]
        work.rng("routes").shuffle(routes)
        kind = leaf.column_type(leaf.key or "")
        table = work.new_leaf(
            leaf.resource,
            f"{label}_routes",
            "routing table",
            "list",
            (("backend", "text"), ("first_key", kind), ("last_key", kind)),
            routes,
            key="backend",
        )
        node = Routed(
            routes=LeafRef(leaf=table.id),
            backends=tuple((n, LeafRef(leaf=b.id)) for n, b in zip(names, backends)),
            key=leaf.key or "",
        )
        work.split(leaf, node, backends)


class ArchiveParams(_P):
    archived: float = Field(gt=0.0, lt=1.0)  # share of rows moved to the archive


class ArchiveViews(Operator):
    name = "archive views"
    summary = "the older rows move to an archive view that needs a session from open_<view>_archive"
    procedure = "read the live view; open the archive (with any bound token), read it with the session; concatenate"
    binding = "opening the archive may require another view's token (one binding)"
    release = "the token requirement is dropped; the archive session stays"
    max_binds = 1
    Params = ArchiveParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        return need_list(leaf, work.payloads[leaf.id], 2)

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        return {"archived": rng.choice([0.3, 0.5, 0.6])}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        rows = work.payloads[leaf.id]
        dated = [n for n, t in leaf.columns if t in ("date", "datetime")]
        order = list(range(len(rows)))
        if dated:  # older first: by the first date column, undated rows oldest
            order.sort(key=lambda i: (rows[i][dated[0]] is not None, rows[i][dated[0]] or ""))
        n = min(len(rows) - 1, max(1, round(len(rows) * params.archived)))
        archived = set(order[:n])
        old = [r for i, r in enumerate(rows) if i in archived]
        new = [r for i, r in enumerate(rows) if i not in archived]
        label = work.resource_label(leaf)
        live = work.new_leaf(
            leaf.resource,
            label,
            "live rows",
            "list",
            leaf.columns,
            new,
            key=leaf.key,
            unique=leaf.unique,
            layers=work.copy_layers(leaf, len(new)),
        )
        inherited = tuple(layer for layer in work.copy_layers(leaf, len(old)) if layer.kind != "archive")
        layers = inherited + (Archive(token=work.token("tk"), requires=tuple(binds)),)
        archive = work.new_leaf(
            leaf.resource,
            f"{label}_archive",
            "archived rows",
            "list",
            leaf.columns,
            old,
            key=leaf.key,
            unique=leaf.unique,
            layers=layers,
        )
        node = Parts(parts=(LeafRef(leaf=live.id), LeafRef(leaf=archive.id)), labels=("live", "archive"), op="archive views")
        work.split(leaf, node, [live, archive])


class CandidateParams(_P):
    decoys: int = Field(ge=1, le=5)


class CandidateIntersection(Operator):
    name = "candidate intersection"
    summary = "the view lists candidates (the records plus look-alike rows); a validity list (a view) holds the real keys"
    procedure = "read the candidates and the validity list; keep the candidates whose key is in the validity list"
    binding = "the validity list is a view: later operators can page, export or gate it"
    Params = CandidateParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        why = need_list(leaf, work.payloads[leaf.id], 2) or need_unique_key(leaf)
        if why:
            return why
        if leaf.column_type(leaf.key or "") not in ("integer", "text"):
            return "the key is neither an integer nor text"
        if any(r[leaf.key] is None for r in work.payloads[leaf.id]):
            return "some rows have no key"
        return None

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        return {"decoys": rng.randint(1, max(1, min(3, len(work.payloads[leaf.id]) // 2)))}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        key = leaf.key or ""
        rows = work.payloads[leaf.id]
        keys = [r[key] for r in rows]
        integer = leaf.column_type(key) == "integer"
        decoys = []
        for i in range(params.decoys):
            source = rows[(i * 7) % len(rows)]
            if integer:
                fake: Any = max(keys) + 1 + i
            else:
                fake = f"{source[key]}-{content_hash([work.salt, leaf.id, i], length=3)}"
            decoys.append({**source, key: fake})
        candidates = list(rows)
        for i, decoy in enumerate(decoys):  # spread the look-alikes through the list
            candidates.insert((i * 3 + 1) % (len(candidates) + 1), decoy)
        label = work.resource_label(leaf)
        view = work.new_leaf(
            leaf.resource,
            label,
            "candidates",
            "list",
            leaf.columns,
            candidates,
            key=key,
            layers=work.copy_layers(leaf, len(candidates)),
        )
        valid = [{key: k} for k in keys]
        work.rng("valid").shuffle(valid)
        listing = work.new_leaf(
            leaf.resource,
            f"{label}_valid",
            f"validity list (the {key} of every real record)",
            "list",
            ((key, leaf.column_type(key)),),
            valid,
            key=key,
        )
        node = Intersect(candidates=LeafRef(leaf=view.id), valid=LeafRef(leaf=listing.id), key=key)
        work.split(leaf, node, [view])


OPERATORS = (Sharding(), SourceRouting(), ArchiveViews(), CandidateIntersection())
