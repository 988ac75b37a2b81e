"""The tool-dependency graph of an app (EnvCraft's topology): which tool's output feeds which input.

A tool *produces* the columns of the rows it returns (reads, lists, searches) or writes (inserts).
A tool *consumes* its parameters. An edge ``A --p--> B`` says B's parameter ``p`` can be filled
from a value A produced: ``p`` names the column itself (``status``), the entity's key in the
usual spellings (``ticket_id`` for ``tickets.id``), or a column whose ``ref`` points at it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from envtrain.core.app import App, Tool

READ_FAMILIES = frozenset({"read", "list", "search"})


@dataclass(frozen=True)
class Edge:
    source: str  # the producing tool
    target: str  # the consuming tool
    param: str  # the target's parameter
    entity: str  # the entity (short name) whose column feeds it
    column: str


@dataclass(frozen=True)
class ToolGraph:
    app: str
    tools: tuple[str, ...]
    edges: tuple[Edge, ...]

    def feeding(self, target: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.target == target)

    def successors(self, source: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.source == source)


def singular(name: str) -> str:
    short = name.split(".")[-1]
    if short.endswith("ies"):
        return short[:-3] + "y"
    return short.removesuffix("s")


def produced(app: App, tool: Tool) -> set[tuple[str, str]]:
    """(entity, column) pairs whose values the tool hands back to the agent."""
    out: set[tuple[str, str]] = set()
    if tool.family in READ_FAMILIES and tool.entity and tool.entity in app.entities:
        fields = tool.returns.fields or tuple(app.entities[tool.entity].columns)
        out |= {(tool.entity, c) for c in fields}
    for effect in tool.effects:
        if effect.kind in ("insert", "link", "send") and effect.entity in app.entities:
            fields = tool.returns.fields or tuple(app.entities[effect.entity].columns)
            out |= {(effect.entity, c) for c in fields}
    return out


def accepts(app: App, param: str, entity: str, column: str) -> bool:
    """Whether a parameter named ``param`` takes values of ``entity.column``."""
    spec = app.entities[entity]
    if param == f"{singular(entity)}_{column}" or (param == column and column != spec.primary_key):
        return True
    if param == column == spec.primary_key:
        return True
    ref = spec.columns[column].ref
    return bool(ref) and param in (ref.split(".")[-1], f"{singular(ref.rsplit('.', 1)[0])}_{ref.rsplit('.', 1)[1]}")


def build_graph(app: App) -> ToolGraph:
    edges: list[Edge] = []
    for source in app.tools:
        outputs = produced(app, source)
        for target in app.tools:
            if target.name == source.name:
                continue
            for param in target.parameters.get("properties", {}):
                for entity, column in sorted(outputs):
                    if accepts(app, param, entity, column) and _same_target(target, entity, param, column, app):
                        edges.append(Edge(source.name, target.name, param, entity, column))
    return ToolGraph(app.name, tuple(t.name for t in app.tools), tuple(dict.fromkeys(edges)))


def _same_target(target: Tool, entity: str, param: str, column: str, app: App) -> bool:
    """A bare ``id`` parameter belongs to the entity the target tool works on, not to any entity."""
    if param != "id":
        return True
    entities = {target.entity} | {e.entity for e in target.effects}
    return entity in entities


def key_params(app: App, tool: Tool) -> Iterable[tuple[str, str]]:
    """(parameter, entity) pairs where an effect's row selector compares the primary key with the parameter."""
    for effect in tool.effects:
        if effect.kind not in ("update", "delete") or effect.entity not in app.entities:
            continue
        pk = app.entities[effect.entity].primary_key
        for clause in effect.where:
            value = clause.value
            if clause.column == pk and clause.op == "=" and getattr(value, "namespace", None) == "arg":
                yield getattr(value, "name", ""), effect.entity
