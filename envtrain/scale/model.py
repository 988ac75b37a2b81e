"""The access structure RES adds to an environment, as typed data stored in the environment itself.

A scaled environment keeps every original table, file, write tool and the verifier exactly as
they were; what changes is how the agent can *read*. Each transformed resource (an original
table, or the workspace files) is reached through a tree of nodes whose leaves are physical view
tables of the generated ``res`` app:

- a **leaf** is one view table with one fetch tool (``read_<name>`` lists every row, or
  ``get_<name>`` reads one row by key) and a stack of **access layers** (pages, export jobs,
  stages, an index to rebuild, an access key, an archive session) that add parameters,
  preconditions and preparation tools to that fetch tool;
- inner nodes say how leaf rows become the original records again: a union of parts, a routed
  union, a join of two halves, a summary/detail pair, an intersection with a validity list, or
  a decode step (numbers, references, bridged ids, renamed columns, versions).

Besides the trees, the registry holds **gates** (envtrain's addition beyond RES): original tools
that refuse until a public preparation has opened them (``Gate``), for tools whose records cannot
be moved. Gates publish tokens and bind to tokens like layers do.

Operators rewrite this tree (``envtrain.scale.operators``); ``build`` turns it into tools,
tables and docs; ``traverse`` restores the records through public tools only. The registry is
kept in ``provenance.settings["res"]`` so the next round starts from the inherited structure.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from envtrain.core.env import Call

ColumnType = Literal["integer", "number", "text", "boolean", "date", "datetime", "json"]
APP = "res"  # the generated app holding every view table, state table and access tool


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- bindings and access layers ------------------------------------------------------------


class Binding(_M):
    """Dependency composition: the consumer's preparation tool takes ``arg`` and accepts only the
    token that the ``layer`` of leaf ``source`` publishes when that layer is prepared (or, with
    layer ``gate``, the token the tool gate ``source`` publishes once it is open)."""

    source: str  # leaf id (L3), or gate id (G7) with layer "gate"
    layer: Literal["export", "stage", "index", "archive", "gate"]
    arg: str  # token_1, token_2, ...


class Paginate(_M):
    kind: Literal["paginate"] = "paginate"
    page_size: int = Field(ge=1)


class Export(_M):
    kind: Literal["export"] = "export"
    token: str  # published in the job row that prepare_<leaf>_export creates
    requires: tuple[Binding, ...] = ()


class Stage(_M):
    kind: Literal["stage"] = "stage"
    stages: int = Field(ge=1)
    token: str  # published by every advance_<leaf>_stage
    requires: tuple[Binding, ...] = ()


class Index(_M):
    kind: Literal["index"] = "index"
    manifest: str  # rebuild_<leaf>_index(manifest) must name it (stated in the access doc)
    token: str
    requires: tuple[Binding, ...] = ()


class KeyGate(_M):
    """Dependent lookup: the fetch tool needs ``access_key``, found in a directory (another subtree).
    ``per_record`` (a key-mode leaf): one key per record, looked up by the record's key."""

    kind: Literal["keygate"] = "keygate"
    scope: str  # secrets rows carry this scope; copies of the gate (after a split) share it
    entry: str  # the directory row to look up (list mode)
    directory: "Node | None" = None  # rows (entry, access_key); None when released: keys are in the doc
    per_record: bool = False
    keys: tuple[tuple[str | None, str], ...]  # (item, key): item None for the one key of a list-mode gate


class Archive(_M):
    kind: Literal["archive"] = "archive"
    token: str  # published in the session row that open_<leaf>_archive creates
    requires: tuple[Binding, ...] = ()


Layer = Annotated[Union[Paginate, Export, Stage, Index, KeyGate, Archive], Field(discriminator="kind")]


class Gate(_M):
    """envtrain's addition beyond RES's 17 operators (RES §3.2, "when actions become available"):
    an original tool that keeps its arguments, effects and results but refuses, with an error
    naming the preparation, until ``prep`` has opened it in the session. For tools that reveal no
    records scaling can move (BFCL's handler tools, every write tool): the verifier may pin what
    they return, so they cannot go or answer differently, only become available later.

    ``enable``: one call of ``enable_<tool>``; ``manifest``: ``load_<tool>_manifest`` with the
    manifest id the access doc states; ``stage``: ``advance_<tool>_setup`` ``stages`` times. The
    preparation may require tokens (``requires``), and publishes ``token`` once the gate is open."""

    id: str  # G4 (numbered with the views: one counter per lineage)
    tool: str  # the original tool it holds
    app: str
    kind: Literal["enable", "manifest", "stage"]
    token: str
    manifest: str | None = None
    stages: int = Field(1, ge=1)
    requires: tuple[Binding, ...] = ()
    depth: int = 0

    @property
    def prep(self) -> str:
        """The preparation tool's name (within the 64 characters of a tool name)."""
        name = {"enable": "enable_{}", "manifest": "load_{}_manifest", "stage": "advance_{}_setup"}[self.kind]
        full = name.format(self.tool)
        return full if len(full) <= 64 else name.format(self.id.lower())
TOKEN_LAYERS = ("export", "stage", "index", "archive")
# Wrapping order when fetching: pages innermost, then stages, then the gates (order-free).
LAYER_ORDER = {"paginate": 0, "stage": 1, "export": 2, "index": 2, "keygate": 2, "archive": 2}


# --- tree nodes ----------------------------------------------------------------------------


class LeafRef(_M):
    kind: Literal["leaf"] = "leaf"
    leaf: str


class Parts(_M):
    """Records split across parts, each record in exactly one (sharding, archive views)."""

    kind: Literal["parts"] = "parts"
    parts: tuple["Node", ...]
    labels: tuple[str, ...]
    op: str


class Routed(_M):
    """Backends named by the rows of a routing table (backend, first_key, last_key)."""

    kind: Literal["routed"] = "routed"
    routes: "Node"
    backends: tuple[tuple[str, "Node"], ...]
    key: str


class Join(_M):
    """A record's columns split across two sources joined one-to-one on ``key``; ``concat``
    lists (field, left column, right column) text split in two."""

    kind: Literal["join"] = "join"
    left: "Node"
    right: "Node"
    key: str
    concat: tuple[tuple[str, str, str], ...] = ()


class Detail(_M):
    """A list of summaries; every other column read one record at a time from a key-mode subtree."""

    kind: Literal["detail"] = "detail"
    summary: "Node"
    detail: "Node"
    key: str


class Intersect(_M):
    """Candidates by one criterion; the records are those whose key is also in ``valid``."""

    kind: Literal["intersect"] = "intersect"
    candidates: "Node"
    valid: "Node"
    key: str


class Numeric(_M):
    kind: Literal["numeric"] = "numeric"
    column: str  # encoded column in the child rows
    field: str  # original column
    encoding: Literal["scaled", "hex"]
    factor: int = 1
    offset: int = 0
    integer: bool = True  # the original values are integers


class Refs(_M):
    kind: Literal["refs"] = "refs"
    column: str  # holds reference ids
    field: str
    lookup: "Node"  # key-mode subtree: (ref, value)


class Bridge(_M):
    kind: Literal["bridge"] = "bridge"
    column: str  # external id column in the child rows
    field: str  # the original key
    mapping: "Node"  # rows (column, field)


class Rename(_M):
    kind: Literal["rename"] = "rename"
    catalog: "Node"  # the external schema: rows (column, field)


class Versions(_M):
    kind: Literal["versions"] = "versions"
    key: str
    revision: str


Step = Annotated[Union[Numeric, Refs, Bridge, Rename, Versions], Field(discriminator="kind")]


class Decode(_M):
    kind: Literal["decode"] = "decode"
    child: "Node"
    step: Step


Node = Annotated[Union[LeafRef, Parts, Routed, Join, Detail, Intersect, Decode], Field(discriminator="kind")]


# --- leaves, resources, registry -----------------------------------------------------------


class Leaf(_M):
    id: str  # L1, L2, ... (stable across rounds)
    name: str  # entity name in the res app and the stem of its tools
    resource: str  # the resource whose tree it serves
    role: str  # what it holds, in words ("part 2 of 3", "status lookup")
    mode: Literal["list", "key"]
    key: str | None = None
    unique: bool = True  # key values are unique among the rows
    columns: tuple[tuple[str, ColumnType], ...]  # payload columns, in order
    layers: tuple[Layer, ...] = ()
    depth: int = 0  # the round that created it (the proposer favours building on recent structure)

    def column_type(self, name: str) -> ColumnType:
        return dict(self.columns)[name]

    def layer(self, kind: str) -> Any:
        return next((layer for layer in self.layers if layer.kind == kind), None)


class Resource(_M):
    key: str  # "helpdesk.tickets", or "files"
    label: str  # "tickets"
    entity: str  # the original entity ("files" for the workspace)
    fields: tuple[tuple[str, ColumnType], ...]
    record_key: str | None  # a unique field, when the readable fields include one
    scope: tuple[Any, ...] | None = None  # primary keys of the readable rows; None: every row
    records_hash: str  # hash of the original records (fields of the rows in scope)
    removed_tools: tuple[str, ...]  # the original read tools, gone from the child
    needed: bool  # the reference solution (or the verifier) reads it
    tree: Node


class Registry(_M):
    version: Literal[1] = 1
    root: str  # the root environment id
    contract: str  # the protected-contract hash of the root
    original_solution: tuple[Call, ...]
    original_docs: int  # the first n docs belong to the task; later ones are access docs
    counter: int = 0  # names new leaves, tokens and tools
    resources: tuple[Resource, ...] = ()
    leaves: tuple[Leaf, ...] = ()
    released: bool = False  # built with dependencies released (the "w/o dependencies" ablation)
    gates: tuple[Gate, ...] = ()  # envtrain's tool gates; absent from the stored form when empty

    def dump(self) -> dict[str, Any]:
        """The stored form: a registry without gates dumps as it did before gates existed, so
        lineages written then replay to the same ids."""
        return self.model_dump(mode="json", exclude=None if self.gates else {"gates"})

    def gate(self, gate_id: str) -> Gate:
        for gate in self.gates:
            if gate.id == gate_id:
                return gate
        raise KeyError(gate_id)

    def resource(self, key: str) -> Resource | None:
        return next((r for r in self.resources if r.key == key), None)

    def leaf(self, leaf_id: str) -> Leaf:
        for leaf in self.leaves:
            if leaf.id == leaf_id:
                return leaf
        raise KeyError(leaf_id)


for _model in (KeyGate, Parts, Routed, Join, Detail, Intersect, Refs, Bridge, Rename, Decode, Resource, Leaf):
    _model.model_rebuild()


def walk_nodes(node: Any):
    """Every node below ``node`` (itself included), aux subtrees of decode steps included."""
    yield node
    kind = node.kind
    if kind == "parts":
        for part in node.parts:
            yield from walk_nodes(part)
    elif kind == "routed":
        yield from walk_nodes(node.routes)
        for _, backend in node.backends:
            yield from walk_nodes(backend)
    elif kind == "join":
        yield from walk_nodes(node.left)
        yield from walk_nodes(node.right)
    elif kind == "detail":
        yield from walk_nodes(node.summary)
        yield from walk_nodes(node.detail)
    elif kind == "intersect":
        yield from walk_nodes(node.candidates)
        yield from walk_nodes(node.valid)
    elif kind == "decode":
        yield from walk_nodes(node.child)
        aux = {"refs": "lookup", "bridge": "mapping", "rename": "catalog"}.get(node.step.kind)
        if aux:
            yield from walk_nodes(getattr(node.step, aux))


def leaf_ids(node: Any) -> list[str]:
    return [n.leaf for n in walk_nodes(node) if n.kind == "leaf"]


def replace_leaf(node: Any, leaf_id: str, new: Any) -> Any:
    """The tree with every reference to ``leaf_id`` replaced by ``new`` (a subtree)."""
    kind = node.kind
    if kind == "leaf":
        return new if node.leaf == leaf_id else node
    r = lambda child: replace_leaf(child, leaf_id, new)  # noqa: E731
    if kind == "parts":
        return node.model_copy(update={"parts": tuple(r(p) for p in node.parts)})
    if kind == "routed":
        return node.model_copy(update={"routes": r(node.routes), "backends": tuple((label, r(b)) for label, b in node.backends)})
    if kind == "join":
        return node.model_copy(update={"left": r(node.left), "right": r(node.right)})
    if kind == "detail":
        return node.model_copy(update={"summary": r(node.summary), "detail": r(node.detail)})
    if kind == "intersect":
        return node.model_copy(update={"candidates": r(node.candidates), "valid": r(node.valid)})
    step = node.step
    aux = {"refs": "lookup", "bridge": "mapping", "rename": "catalog"}.get(step.kind)
    if aux:
        step = step.model_copy(update={aux: r(getattr(step, aux))})
    return node.model_copy(update={"child": r(node.child), "step": step})
