"""Operators that change *when and how* a view can be read: layers on its fetch tool.

pagination, export preparation, multi-source exports, staged release, index reconstruction and
dependent lookups. The view's rows stay as they are; the fetch tool gains arguments and
preconditions, and preparation tools appear. Preparations publish tokens, which is what other
operators bind to (dependency composition).
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envtrain.scale.model import Binding, Export, Index, KeyGate, Leaf, LeafRef, Paginate, Stage
from envtrain.scale.operators.base import Operator, PlanError, Work, need_list


class _P(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PageParams(_P):
    page_size: int = Field(ge=1, le=1000)


class Pagination(Operator):
    name = "pagination"
    basic = True
    summary = "the view's fetch returns pages of page_size rows chained by opaque cursors"
    procedure = "call the fetch with cursor 'start', then with each page's res_next_page until it is null; concatenate"
    Params = PageParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        if leaf.layer("paginate") is not None:
            return "the view is already paged"
        return need_list(leaf, work.payloads[leaf.id], 3)

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        rows = len(work.payloads[leaf.id])
        return {"page_size": rng.randint(1, max(1, min(5, rows // 2)))}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        work.update_leaf(leaf, layers=leaf.layers + (Paginate(page_size=params.page_size),))


class ExportPreparation(Operator):
    name = "export preparation"
    basic = True
    summary = "the view is read only through an export job: prepare_<view>_export gives the job_id its fetch needs"
    procedure = "call prepare_<view>_export (with any tokens it binds), then the fetch with the job_id it returns"
    binding = "its preparation may require the token another view's preparation publishes (one binding)"
    release = "the token requirement is dropped; the export itself stays"
    max_binds = 1

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        return "the view already has an export" if leaf.layer("export") is not None else None

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        work.update_leaf(leaf, layers=leaf.layers + (Export(token=work.token("tk"), requires=tuple(binds)),))


class MultiSourceExports(Operator):
    name = "multi-source exports"
    summary = "the view's export needs the tokens of two or more other preparations"
    procedure = "prepare each source (export, stage, index or archive) to get its token, then prepare the export with all of them"
    binding = "binds the export to two or more token-publishing layers of other views (adds an export if there is none)"
    release = "every token requirement is dropped: a plain export remains"
    max_binds = 3

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        current = leaf.layer("export")
        if current is not None and len(current.requires) >= 2:
            return "the export already has two sources"
        if len(work.token_sources(leaf)) < 2:
            return "fewer than two other views publish tokens"
        return None

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        current = leaf.layer("export")
        if len(binds) < 2 and not work.release:
            raise PlanError("multi-source exports binds at least two sources")
        old = current.requires if current is not None else ()
        requires = tuple(b.model_copy(update={"arg": f"token_{i}"}) for i, b in enumerate(old + tuple(binds), 1))
        export = Export(token=current.token if current is not None else work.token("tk"), requires=requires)
        layers = tuple(layer for layer in leaf.layers if layer.kind != "export") + (export,)
        work.update_leaf(leaf, layers=layers)


class StageParams(_P):
    stages: int = Field(ge=2, le=6)


class StagedRelease(Operator):
    name = "staged release"
    summary = "the view's rows are released in stages; the fetch shows only the stage released last"
    procedure = "repeat: advance_<view>_stage, then read the view (all its pages), until every stage is released"
    binding = "advancing may require another view's token (one binding)"
    release = "the token requirement is dropped; the stages stay"
    max_binds = 1
    Params = StageParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        if leaf.layer("stage") is not None:
            return "the view is already staged"
        return need_list(leaf, work.payloads[leaf.id], 2)

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        return {"stages": rng.randint(2, max(2, min(4, len(work.payloads[leaf.id]))))}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        if params.stages > len(work.payloads[leaf.id]):
            raise PlanError(f"{params.stages} stages for {len(work.payloads[leaf.id])} rows: a stage would be empty")
        work.update_leaf(leaf, layers=leaf.layers + (Stage(stages=params.stages, token=work.token("tk"), requires=tuple(binds)),))


class IndexReconstruction(Operator):
    name = "index reconstruction"
    summary = "the view answers only after rebuild_<view>_index is called with the manifest named in the access doc"
    procedure = "call rebuild_<view>_index with the manifest (and any bound tokens), then the fetch"
    binding = "the rebuild may require another view's token (one binding)"
    release = "the token requirement is dropped; the rebuild stays"
    max_binds = 1

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        return "the view already has an index" if leaf.layer("index") is not None else None

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        layer = Index(manifest=work.token("mf"), token=work.token("tk"), requires=tuple(binds))
        work.update_leaf(leaf, layers=leaf.layers + (layer,))


class DependentLookups(Operator):
    name = "dependent lookups"
    summary = (
        "the view's fetch needs an access_key that is looked up in a key directory (a new view); "
        "a view read by key needs a key per record, looked up by the record's key"
    )
    procedure = "read the key directory (or look the record's key up in it), then call the fetch with the access_key found"
    binding = "the key comes from the directory view's output; later operators may gate the directory itself"
    release = "no directory: the access keys are stated in the access doc"

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        if leaf.layer("keygate") is not None:
            return "the view already needs an access key"
        if leaf.mode == "key" and (leaf.key is None or not work.payloads[leaf.id]):
            return "the view has no records to key"
        return None

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        label = work.resource_label(leaf)
        rows = work.payloads[leaf.id]
        if leaf.mode == "key":
            assert leaf.key is not None
            keys = tuple((str(row[leaf.key]), work.token("ak")) for row in rows)
            directory = None
            if not work.release:
                entries = [{"entry": row[leaf.key], "access_key": key} for row, (_, key) in zip(rows, keys)]
                work.rng("directory").shuffle(entries)
                kind = leaf.column_type(leaf.key)
                made = work.new_leaf(
                    leaf.resource,
                    f"{label}_keys",
                    f"access keys of {leaf.name}, by entry",
                    "key",
                    (("entry", kind), ("access_key", "text")),
                    entries,
                    key="entry",
                )
                directory = LeafRef(leaf=made.id)
            else:
                work.next()  # the directory's view number stays taken, so released replays keep every later id
            gate = KeyGate(scope=leaf.id, entry="", directory=directory, per_record=True, keys=keys)
        else:
            entry = f"{label}/{leaf.name}"
            secret = work.token("ak")
            directory = None
            if not work.release:
                entries = [{"entry": entry, "access_key": secret}] + [
                    {"entry": f"{label}/retired-{i}", "access_key": work.token("ak")} for i in (1, 2)
                ]
                work.rng("directory").shuffle(entries)
                made = work.new_leaf(
                    leaf.resource,
                    f"{label}_keys",
                    "key directory",
                    "list",
                    (("entry", "text"), ("access_key", "text")),
                    entries,
                    key="entry",
                )
                directory = LeafRef(leaf=made.id)
            else:
                work.next()
            gate = KeyGate(scope=leaf.id, entry=entry, directory=directory, keys=((None, secret),))
        work.update_leaf(leaf, layers=leaf.layers + (gate,))


OPERATORS = (Pagination(), ExportPreparation(), MultiSourceExports(), StagedRelease(), IndexReconstruction(), DependentLookups())
