"""What every operator declares, and the construction state operators act on.

An operator is bound to one **view** (a leaf of a resource's access tree, or an original resource
on first touch, which is first materialised into one view), or, for envtrain's gating operators
(``acts_on = "tool"``), to one original **tool**, and rewrites it: new view tables,
layers on its fetch tool, or a decode step above it. Each operator class states

- ``applies``: the capability a view needs (list or key mode, a numeric column, a unique key, ...);
- ``Params``: its parameters (a typed model; the programmatic proposer samples them);
- ``apply``: the transformation (rows, layers, tree);
- ``procedure``: the public restoration, in words; ``envtrain.scale.traverse`` executes it;
- ``binding``: how it consumes another operator's output (dependency composition);
- ``release``: what the "w/o dependencies" ablation does to it.

``Work`` is the mutable state of one Apply call, local to it: registry parts being rewritten,
the payload rows of every view and the tool gates. Names, tokens and keys come from a counter hashed with the
parent's id, so an Apply is a pure function of (parent, plan).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Literal, Mapping

from pydantic import BaseModel, ConfigDict

from envtrain.core.io import content_hash
from envtrain.scale.analysis import FILE_READ_HANDLERS, READ_FAMILIES, Original
from envtrain.scale.model import (
    TOKEN_LAYERS,
    Archive,
    Binding,
    Export,
    Gate,
    Index,
    Leaf,
    LeafRef,
    Paginate,
    Registry,
    Resource,
    Stage,
    leaf_ids,
    replace_leaf,
)


class PlanError(ValueError):
    """A plan that cannot be applied: unknown operator or target, bad parameters, a binding to nothing."""


class NoParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class ToolTarget:
    """An original tool of the parent, as a gating operator sees it."""

    name: str
    app: str
    family: str
    handler: str | None
    gold: bool  # the original reference solution calls it

    @property
    def records(self) -> bool:
        """Whether a record operator owns it: a declarative read tool, or a workspace file read."""
        return self.family in READ_FAMILIES and (self.handler is None or self.handler in FILE_READ_HANDLERS)


@dataclass
class Work:
    registry: Registry
    payloads: dict[str, list[dict[str, Any]]]
    salt: str  # the parent's id: every generated name and token depends on it
    depth: int  # the depth of the child being built
    release: bool  # build with dependencies released
    originals: Callable[[], dict[str, Original]]
    tools: Mapping[str, ToolTarget] = field(default_factory=dict)  # the parent's original tools (gating targets)
    counter: int = 0
    seq: int = 0  # tokens and shuffles of this Apply (the salt makes them differ across rounds)
    resources: dict[str, Resource] = field(default_factory=dict)
    leaves: dict[str, Leaf] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)  # original read tools removed by this Apply
    gates: dict[str, Gate] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.counter = self.registry.counter
        self.resources = {r.key: r for r in self.registry.resources}
        self.leaves = {leaf.id: leaf for leaf in self.registry.leaves}
        self.gates = {gate.id: gate for gate in self.registry.gates}

    def fork(self) -> "Work":
        """An independent copy to try steps on (operators never mutate rows in place)."""
        new = Work(
            self.registry,
            dict(self.payloads),
            salt=self.salt,
            depth=self.depth,
            release=self.release,
            originals=self.originals,
            tools=self.tools,
        )
        new.counter, new.seq = self.counter, self.seq
        new.resources, new.leaves, new.removed = dict(self.resources), dict(self.leaves), list(self.removed)
        new.gates = dict(self.gates)
        return new

    def nodes(self) -> dict[str, Any]:
        """Views and gates by id: the prerequisite graph's nodes."""
        return {**self.leaves, **self.gates}

    # -- names and secrets ----------------------------------------------------------------------

    def next(self) -> int:
        """The next view number: views are numbered L1, L2, ... across the whole lineage, so a
        proposer can predict the ids a step creates."""
        self.counter += 1
        return self.counter

    def token(self, prefix: str) -> str:
        self.seq += 1
        return f"{prefix}-{content_hash([self.salt, 't', self.seq, prefix], length=8)}"

    def rng(self, *parts: Any) -> random.Random:
        """A random stream fixed by the parent and the purpose: shuffles replay exactly."""
        self.seq += 1
        return random.Random(content_hash([self.salt, "r", self.seq, *parts]))

    # -- views ----------------------------------------------------------------------------------

    def new_leaf(
        self,
        resource: str,
        stem: str,
        role: str,
        mode: str,
        columns,
        rows: list[dict[str, Any]],
        *,
        key: str | None,
        unique: bool = True,
        layers: tuple = (),
    ) -> Leaf:
        n = self.next()
        stem = re.sub(r"[^a-z0-9_]", "_", stem.lower())[:28].strip("_") or "view"
        leaf = Leaf(
            id=f"L{n}",
            name=f"{stem}_{n}",
            resource=resource,
            role=role,
            mode=mode,
            key=key,
            unique=unique,
            columns=tuple(columns),
            layers=tuple(layers),
            depth=self.depth,
        )
        self.leaves[leaf.id] = leaf
        self.payloads[leaf.id] = rows
        return leaf

    def update_leaf(self, leaf: Leaf, rows: list[dict[str, Any]] | None = None, **changes: Any) -> Leaf:
        new = leaf.model_copy(update=changes)
        self.leaves[leaf.id] = new
        if rows is not None:
            self.payloads[leaf.id] = rows
        return new

    def resource_label(self, leaf: Leaf) -> str:
        return self.resources[leaf.resource].label

    def replace(self, leaf_id: str, node: Any) -> None:
        """Put ``node`` where the view ``leaf_id`` was: in resource trees and key directories."""
        for key, resource in self.resources.items():
            if leaf_id in leaf_ids(resource.tree):
                self.resources[key] = resource.model_copy(update={"tree": replace_leaf(resource.tree, leaf_id, node)})
        for lid, leaf in list(self.leaves.items()):
            gates = [layer for layer in leaf.layers if layer.kind == "keygate" and layer.directory is not None]
            if any(leaf_id in leaf_ids(g.directory) for g in gates):
                layers = tuple(
                    layer.model_copy(update={"directory": replace_leaf(layer.directory, leaf_id, node)})
                    if layer.kind == "keygate" and layer.directory is not None
                    else layer
                    for layer in leaf.layers
                )
                self.leaves[lid] = leaf.model_copy(update={"layers": layers})

    def split(self, leaf: Leaf, node: Any, parts: list[Leaf]) -> None:
        """``leaf`` is gone, ``node`` (over ``parts``) takes its place; bindings to it move to the parts."""
        self.replace(leaf.id, node)
        del self.leaves[leaf.id]
        del self.payloads[leaf.id]
        for lid, other in list(self.leaves.items()):
            changed = False
            layers = []
            for layer in other.layers:
                requires = getattr(layer, "requires", ())
                if any(b.source == leaf.id for b in requires):
                    layer = layer.model_copy(update={"requires": _moved(requires, leaf.id, parts)})
                    changed = True
                layers.append(layer)
            if changed:
                self.leaves[lid] = other.model_copy(update={"layers": tuple(layers)})
        for gid, gate in list(self.gates.items()):
            if any(b.source == leaf.id for b in gate.requires):
                self.gates[gid] = gate.model_copy(update={"requires": _moved(gate.requires, leaf.id, parts)})

    def copy_layers(self, leaf: Leaf, rows: int) -> tuple:
        """The leaf's access layers for a view split from it: same kinds, fresh tokens and state."""
        out = []
        for layer in leaf.layers:
            kind = layer.kind
            if kind == "paginate":
                out.append(Paginate(page_size=layer.page_size))
            elif kind == "export":
                out.append(Export(token=self.token("tk"), requires=layer.requires))
            elif kind == "stage":
                out.append(Stage(stages=max(1, min(layer.stages, rows)), token=self.token("tk"), requires=layer.requires))
            elif kind == "index":
                out.append(Index(manifest=self.token("mf"), token=self.token("tk"), requires=layer.requires))
            elif kind == "archive":
                out.append(Archive(token=self.token("tk"), requires=layer.requires))
            else:
                out.append(layer)  # a key gate is shared: same scope, same directory entry
        return tuple(out)

    # -- targets and bindings -------------------------------------------------------------------

    def target(self, name: str) -> Leaf:
        """A view by id, or an original resource materialised into one view on first touch."""
        if name in self.leaves:
            return self.leaves[name]
        if name in self.resources:
            views = ", ".join(leaf_ids(self.resources[name].tree))
            raise PlanError(f"resource {name!r} is already transformed: target one of its views ({views})")
        originals = self.originals()
        if name not in originals:
            known = sorted(set(originals) | set(self.leaves))
            raise PlanError(f"unknown target {name!r} (targets: {', '.join(known) or 'none'})")
        return self.materialize(originals[name])

    def materialize(self, original: Original) -> Leaf:
        leaf = self.new_leaf(
            original.key,
            original.label,
            "records",
            "list",
            original.fields,
            [dict(r) for r in original.records],
            key=original.record_key,
            unique=original.record_key is not None,
        )
        self.resources[original.key] = Resource(
            key=original.key,
            label=original.label,
            entity=original.entity,
            fields=original.fields,
            record_key=original.record_key,
            scope=original.scope,
            records_hash=original.records_hash,
            removed_tools=original.tools,
            needed=original.needed,
            tree=LeafRef(leaf=leaf.id),
        )
        self.removed.extend(original.tools)
        return leaf

    def binding(self, spec: str, consumer: Any, index: int) -> Binding:
        """``L4`` or ``L4:export`` -> a binding to that view's token-publishing layer; ``G5`` or
        ``G5:gate`` -> a binding to the token that tool gate publishes once open."""
        source_id, _, kind = spec.partition(":")
        if source_id in self.gates:
            if kind not in ("", "gate"):
                raise PlanError(f"binding {spec!r}: gate {source_id} publishes a gate token, not {kind}")
            return Binding(source=source_id, layer="gate", arg=f"token_{index}")
        source = self.leaves.get(source_id)
        if source is None:
            raise PlanError(f"binding {spec!r}: no view {source_id!r} (nor gate)")
        kinds = [layer.kind for layer in source.layers if layer.kind in TOKEN_LAYERS]
        if kind and kind not in kinds or not kinds:
            raise PlanError(
                f"binding {spec!r}: view {source_id} publishes no {kind or 'token'} (it has {kinds or 'no token layer'})"
            )
        return Binding(source=source_id, layer=kind or kinds[0], arg=f"token_{index}")

    def token_sources(self, exclude: Leaf | None) -> list[str]:
        """Bindable outputs ``Lx:kind`` of other views and ``Gx:gate`` of gates that do not
        (transitively) need ``exclude`` (None: a consumer nothing needs yet, such as a new gate)."""
        from envtrain.scale.graph import dependents

        blocked: set[str] = set()
        if exclude is not None:
            blocked = dependents(self.nodes(), exclude.id) | {exclude.id}
        out = []
        for leaf in self.leaves.values():
            if leaf.id in blocked:
                continue
            out.extend(f"{leaf.id}:{layer.kind}" for layer in leaf.layers if layer.kind in TOKEN_LAYERS)
        out.extend(f"{gid}:gate" for gid in self.gates if gid not in blocked)
        return out

    def tool_target(self, name: str) -> ToolTarget:
        """An original tool of the parent, for the gating operators."""
        target = self.tools.get(name)
        if target is None:
            known = ", ".join(sorted(self.tools)) or "none"
            raise PlanError(f"unknown tool {name!r} (original tools: {known})")
        return target

    def to_registry(self) -> Registry:
        return self.registry.model_copy(
            update={
                "counter": self.counter,
                "resources": tuple(self.resources.values()),
                "leaves": tuple(self.leaves.values()),
                "gates": tuple(self.gates.values()),
                "released": self.registry.released or self.release,
            }
        )


class Operator:
    """Base of the 17 operators (and of envtrain's gating operators). Subclasses set the class
    attributes and implement the methods; ``applies``, ``sample`` and ``apply`` get the target:
    a view (``Leaf``), or a ``ToolTarget`` when ``acts_on`` is ``"tool"``."""

    name: ClassVar[str]
    basic: ClassVar[bool] = False
    acts_on: ClassVar[Literal["view", "tool"]] = "view"
    origin: ClassVar[str] = "RES App. D.1"
    summary: ClassVar[str]
    procedure: ClassVar[str]
    binding: ClassVar[str] = "none: it consumes no other operator's output."
    release: ClassVar[str] = "nothing to release."
    max_binds: ClassVar[int] = 0
    Params: ClassVar[type[BaseModel]] = NoParams

    def applies(self, work: Work, leaf: Leaf) -> str | None:
        """None when the operator applies to ``leaf``; otherwise why not."""
        raise NotImplementedError

    def sample(self, work: Work, leaf: Leaf, rng: random.Random) -> dict[str, Any]:
        """Parameters for the programmatic proposer."""
        return {}

    def apply(self, work: Work, leaf: Leaf, params: Any, binds: list[Binding]) -> None:
        raise NotImplementedError

    def describe(self) -> dict[str, str]:
        return {
            "name": self.name,
            "library": "basic" if self.basic else "full",
            "origin": self.origin,
            "summary": self.summary,
            "procedure": self.procedure,
            "binding": self.binding,
            "release": self.release,
        }


# --- helpers shared by operators -------------------------------------------------------------


def _moved(requires: tuple[Binding, ...], old: str, parts: list[Leaf]) -> tuple[Binding, ...]:
    """Bindings to the split view ``old`` moved to the part that publishes the same kind of token."""
    moved = []
    for b in requires:
        if b.source == old:
            target = next((p for p in parts if p.layer(b.layer) is not None), None)
            if target is None:
                continue  # the source layer did not survive the split: the prerequisite is released
            b = b.model_copy(update={"source": target.id})
        moved.append(b)
    return tuple(moved)


def need_list(leaf: Leaf, rows: list[dict[str, Any]], minimum: int = 2) -> str | None:
    if leaf.mode != "list":
        return "the view is read by key, not listed"
    if len(rows) < minimum:
        return f"the view has {len(rows)} rows (needs {minimum})"
    return None


def need_unique_key(leaf: Leaf) -> str | None:
    if leaf.key is None or not leaf.unique:
        return "the view has no unique key"
    return None


def chunks(rows: list[Any], n: int) -> list[list[Any]]:
    """``rows`` in ``n`` contiguous, non-empty, nearly equal parts."""
    size, extra = divmod(len(rows), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(rows[start:end])
        start = end
    return out


def columns_of(leaf: Leaf, *types: str, exclude_key: bool = True) -> list[str]:
    return [n for n, t in leaf.columns if t in types and not (exclude_key and n == leaf.key)]


def fresh_name(leaf: Leaf, base: str) -> str:
    names = {n for n, _ in leaf.columns}
    name, i = base, 2
    while name in names:
        name, i = f"{base}{i}", i + 1
    return name
