"""Access docs: one public document per transformed resource, saying how to reach its records.

RES keeps the task specification and adds "access instructions needed after environmental
changes" (§3.1). The docs are generated from the same tree the traversal follows, so every
step the model-free restoration takes is stated here, and every tool named here exists.
"""

from __future__ import annotations

from typing import Any

from envtrain.scale.build import FIRST_CURSOR, fetch_tool, key_arg, prep_tool, token_tool
from envtrain.scale.model import Gate, Leaf, Registry, Resource

GATES_DOC = "Access: tools"


def access_docs(registry: Registry) -> list[dict[str, str]]:
    docs = [{"title": f"Access: {r.label}", "body": describe_resource(registry, r)} for r in registry.resources]
    if registry.gates:
        docs.append({"title": GATES_DOC, "body": describe_gates(registry)})
    return docs


def describe_gates(registry: Registry) -> str:
    """How to open every gated tool; in the order the gates were added, grouped by tool."""
    head = (
        "Some tools refuse to run until they are prepared. A preparation opens its tool for the rest of the "
        "session; the tool's arguments, effects and results are otherwise unchanged. A tool with several "
        "preparations needs all of them."
    )
    lines = [head]
    tools: dict[str, list[Gate]] = {}
    for gate in registry.gates:
        tools.setdefault(gate.tool, []).append(gate)
    for tool, gates in tools.items():
        lines.append(_bullet(0, f"`{tool}`:"))
        for gate in gates:
            if gate.kind == "enable":
                text = f"call `{gate.prep}` once."
            elif gate.kind == "manifest":
                text = f"call `{gate.prep}` with manifest '{gate.manifest}'."
            else:
                text = f"call `{gate.prep}` {gate.stages} times (its setup has {gate.stages} steps)."
            lines.append(_bullet(1, text))
            for binding in gate.requires:
                lines.append(
                    _bullet(2, f"`{gate.prep}` also needs {binding.arg}: the token returned by `{token_tool(registry, binding)}`.")
                )
    return "\n".join(lines)


def describe_resource(registry: Registry, resource: Resource) -> str:
    was = ", ".join(resource.removed_tools)
    head = (
        f"The {resource.label} records are no longer read with {was}. They are reached as described below; "
        f"followed completely, the steps give every record exactly once."
    )
    return "\n".join([head] + _node(registry, resource.tree, 0))


def _bullet(depth: int, text: str) -> str:
    return "  " * depth + "- " + text


def _node(registry: Registry, node: Any, depth: int) -> list[str]:
    kind = node.kind
    if kind == "leaf":
        return _leaf(registry, registry.leaf(node.leaf), depth)
    if kind == "parts":
        lines = [
            _bullet(
                depth,
                f"The records are split into {len(node.parts)} parts ({node.op}); each record is in exactly one. "
                "Read every part and put them together:",
            )
        ]
        for label, part in zip(node.labels, node.parts):
            lines.append(_bullet(depth + 1, f"{label}:"))
            lines.extend(_node(registry, part, depth + 2))
        return lines
    if kind == "routed":
        lines = [
            _bullet(
                depth,
                f"The records live on {len(node.backends)} backends. A routing table (rows: backend, first_key, "
                f"last_key over {node.key}) names each backend; read it, then every backend it names:",
            )
        ]
        lines.append(_bullet(depth + 1, "routing table:"))
        lines.extend(_node(registry, node.routes, depth + 2))
        for label, backend in node.backends:
            lines.append(_bullet(depth + 1, f"backend {label}:"))
            lines.extend(_node(registry, backend, depth + 2))
        return lines
    if kind == "join":
        text = f"Each record is split into two halves that share {node.key}; join them on {node.key}."
        for field, left, right in node.concat:
            text += f" The {field} text is {left} followed directly by {right}."
        return [
            _bullet(depth, text),
            _bullet(depth + 1, "first half:"),
            *_node(registry, node.left, depth + 2),
            _bullet(depth + 1, "second half:"),
            *_node(registry, node.right, depth + 2),
        ]
    if kind == "detail":
        return [
            _bullet(depth, f"A summary list gives each record's {node.key}; the other fields are read one record at a time:"),
            _bullet(depth + 1, "summaries:"),
            *_node(registry, node.summary, depth + 2),
            _bullet(depth + 1, f"details, by {node.key}:"),
            *_node(registry, node.detail, depth + 2),
        ]
    if kind == "intersect":
        return [
            _bullet(
                depth,
                f"The candidate list also holds rows that are not records; a row is a record only if its {node.key} "
                "is in the validity list.",
            ),
            _bullet(depth + 1, "candidates:"),
            *_node(registry, node.candidates, depth + 2),
            _bullet(depth + 1, "validity list:"),
            *_node(registry, node.valid, depth + 2),
        ]
    step = node.step
    if step.kind == "numeric":
        if step.encoding == "hex":
            text = f"Column {step.column} holds {step.field} written in hexadecimal ('0x...'); {step.field} is its value."
        else:
            text = (
                f"Column {step.column} holds {step.field} x {step.factor} + {step.offset}: "
                f"{step.field} = ({step.column} - {step.offset}) / {step.factor}."
            )
        return [_bullet(depth, text), *_node(registry, node.child, depth + 1)]
    if step.kind == "refs":
        return [
            _bullet(
                depth,
                f"Column {step.column} holds reference ids; the {step.field} of a record is the value its reference "
                "resolves to in the lookup below (a null reference is a null value).",
            ),
            *_node(registry, node.child, depth + 1),
            _bullet(depth + 1, "lookup (rows: ref, value):"),
            *_node(registry, step.lookup, depth + 2),
        ]
    if step.kind == "bridge":
        return [
            _bullet(depth, f"Column {step.column} holds external ids; map each to its {step.field} with the mapping below."),
            *_node(registry, node.child, depth + 1),
            _bullet(depth + 1, f"mapping (rows: {step.column}, {step.field}):"),
            *_node(registry, step.mapping, depth + 2),
        ]
    if step.kind == "rename":
        return [
            _bullet(
                depth,
                "Columns are named by an external schema: each row of the schema below maps a column to the field it holds.",
            ),
            *_node(registry, node.child, depth + 1),
            _bullet(depth + 1, "schema (rows: column, field):"),
            *_node(registry, step.catalog, depth + 2),
        ]
    return [
        _bullet(
            depth,
            f"Rows are revisions (column {step.revision}); for each {step.key} only the row with the highest "
            f"{step.revision} is authoritative. Drop the others and the {step.revision} column.",
        ),
        *_node(registry, node.child, depth + 1),
    ]


def _leaf(registry: Registry, leaf: Leaf, depth: int) -> list[str]:
    if leaf.mode == "list":
        lines = [_bullet(depth, f"`{fetch_tool(leaf)}` lists {leaf.role}.")]
    else:
        lines = [_bullet(depth, f"`{fetch_tool(leaf)}` reads one row of {leaf.role} by {key_arg(leaf)}.")]
    for layer in leaf.layers:
        kind = layer.kind
        if kind == "paginate":
            text = (
                f"It returns pages of {layer.page_size}: call it with cursor '{FIRST_CURSOR}', then with each page's "
                "res_next_page until that is null."
            )
        elif kind == "export":
            text = f"It needs job_id: call `{prep_tool(leaf, 'export')}` first and pass the job_id it returns."
        elif kind == "stage":
            text = (
                f"Its rows are released in {layer.stages} stages and it shows only the stage released last: call "
                f"`{prep_tool(leaf, 'stage')}`, read, and repeat until every stage is released."
            )
        elif kind == "index":
            text = f"Its index must be rebuilt first: call `{prep_tool(leaf, 'index')}` with manifest '{layer.manifest}'."
        elif kind == "archive":
            text = f"It is archived: call `{prep_tool(leaf, 'archive')}` and pass the session_id it returns as archive_session."
        elif layer.directory is None:
            keys = ", ".join(f"{item}: {key}" if item is not None else key for item, key in layer.keys)
            text = f"It needs access_key ({'per record: ' if layer.per_record else ''}{keys})."
        elif layer.per_record:
            text = f"It needs the access_key of each record: look up the record's {leaf.key} as entry in the key directory below."
        else:
            text = f"It needs access_key: the key of entry '{layer.entry}' in the key directory below."
        lines.append(_bullet(depth + 1, text))
        for binding in getattr(layer, "requires", ()):
            lines.append(
                _bullet(
                    depth + 2,
                    f"`{prep_tool(leaf, kind)}` also needs {binding.arg}: the token returned by "
                    f"`{token_tool(registry, binding)}`.",
                )
            )
        if kind == "keygate" and layer.directory is not None:
            lines.append(_bullet(depth + 2, "key directory (rows: entry, access_key):"))
            lines.extend(_node(registry, layer.directory, depth + 3))
    return lines
