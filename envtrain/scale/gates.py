"""Tool gates as the agent meets them: envtrain's addition beyond RES's 17 operators.

A gate holds an original tool: the tool gains one precondition, first among its own, on the
hidden ``res.gates`` table (its gate row must be open), and the ``res`` app gains the public
preparation that opens the row. Nothing else of the tool changes, so once open it takes the
same arguments, has the same effects and returns the same results; closed, it refuses with an
``invalid_transition`` error naming the preparation, and a refused call changes nothing.

The protected contract hashes every original tool as it was before gating (``strip_gates``):
the gates a registry records are exactly the leading preconditions it may remove, so an edited
guard, or a gate the registry does not record, still changes the contract. Pure functions of the
registry, like ``build``.
"""

from __future__ import annotations

from typing import Any, Iterable

from envtrain.core.app import App, Guard, Tool
from envtrain.core.env import Call
from envtrain.scale.build import q, token_requirements
from envtrain.scale.docs import GATES_DOC
from envtrain.scale.model import APP, Gate, Registry

GATES = "gates"  # the hidden state entity of the res app
_APP_DESCRIPTION = (
    "Access views added by environment scaling: the records of transformed resources "
    "and the tools that prepare and read them (see the access docs)."
)


def gate_guard(gate: Gate) -> Guard:
    """The precondition that holds the gated tool until its gate is open."""
    return Guard.model_validate(
        {
            "entity": f"{APP}.{GATES}",
            "where": [f"gate = {q(gate.id)}", "current >= last"],
            "error": "invalid_transition",
            "message": f"{gate.tool} is not available yet: call {gate.prep} first (see the access doc '{GATES_DOC}').",
        }
    )


def _by_tool(gates: Iterable[Gate]) -> dict[tuple[str, str], list[Gate]]:
    out: dict[tuple[str, str], list[Gate]] = {}
    for gate in gates:
        out.setdefault((gate.app, gate.tool), []).append(gate)
    return out


def strip_gates(tool: Tool, gates: list[Gate]) -> Tool:
    """``tool`` without the gate guards ``gates`` put first among its preconditions (as it was
    before gating); unchanged when its leading preconditions are not exactly those guards."""
    if not gates:
        return tool
    want = [gate_guard(g).model_dump(mode="json") for g in gates]
    have = [p.model_dump(mode="json") for p in tool.preconditions[: len(want)]]
    if have != want:
        return tool
    return tool.model_copy(update={"preconditions": tool.preconditions[len(want) :]})


def ungated_tools(app: App, registry: Registry | None) -> list[Tool]:
    """The app's tools with the registry's gates removed (the contract's view of them)."""
    held = _by_tool(registry.gates) if registry is not None else {}
    return [strip_gates(t, held.get((app.name, t.name), [])) for t in app.tools]


def regate(app: App, old: Iterable[Gate], new: Iterable[Gate]) -> App:
    """``app`` with the gates ``old`` (the parent's) replaced by ``new`` (the child's)."""
    before, after = _by_tool(old), _by_tool(new)
    names = {tool for app_name, tool in set(before) | set(after) if app_name == app.name}
    if not names:
        return app
    tools = []
    for tool in app.tools:
        if tool.name in names:
            tool = strip_gates(tool, before.get((app.name, tool.name), []))
            guards = tuple(gate_guard(g) for g in after.get((app.name, tool.name), []))
            tool = tool.model_copy(update={"preconditions": guards + tool.preconditions})
        tools.append(tool)
    return app.model_copy(update={"tools": tuple(tools)})


def gate_rows(registry: Registry) -> dict[str, list[dict[str, Any]]]:
    """W0 rows of the hidden gates table: every gate closed."""
    if not registry.gates:
        return {}
    return {
        f"{APP}.{GATES}": [
            {"gate": g.id, "tool": g.tool, "current": 0, "last": g.stages if g.kind == "stage" else 1,
             "manifest": g.manifest, "token": g.token}
            for g in registry.gates
        ]
    }


def _prep_tool(gate: Gate, registry: Registry) -> dict[str, Any]:
    props, guards = token_requirements(gate, registry)
    row = [f"gate = {q(gate.id)}"]
    if gate.kind == "enable":
        description = f"Enable {gate.tool} for this session."
        values = {"current": "last"}
    elif gate.kind == "manifest":
        props = {"manifest": {"type": "string", "description": "the manifest id named in the access doc"}, **props}
        guards.append(
            {
                "entity": GATES,
                "where": row + ["manifest = $arg.manifest"],
                "error": "not_found",
                "message": f"No manifest {{manifest}} for {gate.tool}.",
            }
        )
        description = f"Load the manifest of {gate.tool}, so that it runs for this session."
        values = {"current": "last"}
    else:
        guards.append(
            {
                "entity": GATES,
                "where": row + ["current < last"],
                "error": "invalid_transition",
                "message": f"The setup of {gate.tool} is complete already.",
            }
        )
        description = f"Run the next step of the setup of {gate.tool} ({gate.stages} steps); it runs once every step is done."
        values = {"current": "current + 1"}
    tool = {
        "name": gate.prep,
        "description": description,
        "family": "update",
        "parameters": {"type": "object", "properties": props, "required": list(props)},
        "effects": [{"kind": "update", "entity": GATES, "where": row, "values": values}],
        "returns": {"fields": ["current", "last", "token"]},
    }
    if guards:
        tool["preconditions"] = guards
    return tool


def with_gates(app: dict[str, Any] | None, registry: Registry) -> dict[str, Any] | None:
    """The generated app spec with the gates' state table and preparation tools added."""
    if not registry.gates:
        return app
    if app is None:
        app = {"name": APP, "description": _APP_DESCRIPTION, "entities": {}, "tools": []}
    text, integer = {"type": "text"}, {"type": "integer"}
    entities = dict(app["entities"])
    entities[GATES] = {
        "description": "tool gates (hidden state)",
        "primary_key": "gate",
        "columns": {"gate": text, "tool": text, "current": integer, "last": integer, "manifest": text, "token": text},
    }
    tools = list(app["tools"]) + [_prep_tool(g, registry) for g in registry.gates]
    return {**app, "entities": entities, "tools": tools}


def gold_call(registry: Registry, tool: str) -> Call | None:
    """The first call of ``tool`` in the original reference solution (the bypass check's arguments)."""
    return next((c for c in registry.original_solution if c.tool == tool), None)


def gates_in_use_order(registry: Registry, solution: Iterable[Call]) -> tuple[list[Gate], list[Gate]]:
    """(gates of tools the solution calls, in the order it first calls them; the other gates)."""
    first: dict[str, int] = {}
    for i, call in enumerate(solution):
        first.setdefault(call.tool, i)
    used = sorted((g for g in registry.gates if g.tool in first), key=lambda g: first[g.tool])
    return used, [g for g in registry.gates if g.tool not in first]
