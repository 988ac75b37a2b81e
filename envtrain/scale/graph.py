"""The prerequisite graph between views and gates: reading view A (or opening gate A) needs B
when a layer of A (or the gate's preparation) binds a token B publishes, or A's access key is
looked up in a directory that view B is part of.

The proposer keeps it acyclic when it composes dependencies; validation rejects a cycle (a
preparation that can never become ready) under the ``termination`` check.
"""

from __future__ import annotations

from typing import Any, Mapping

from envtrain.scale.model import Gate, leaf_ids


def _needs(node: Any) -> set[str]:
    if isinstance(node, Gate):
        return {b.source for b in node.requires}
    needs: set[str] = set()
    for layer in node.layers:
        needs.update(b.source for b in getattr(layer, "requires", ()))
        if layer.kind == "keygate" and layer.directory is not None:
            needs.update(leaf_ids(layer.directory))
    return needs


def edges(nodes: Mapping[str, Any]) -> dict[str, set[str]]:
    """``nodes``: views (Leaf) and gates (Gate) by id."""
    return {node.id: _needs(node) for node in nodes.values()}


def depends_on(nodes: Mapping[str, Any], start: str, target: str) -> bool:
    """Whether reading ``start`` (transitively) needs ``target``."""
    graph = edges(nodes)
    seen, stack = set(), list(graph.get(start, ()))
    while stack:
        node = stack.pop()
        if node == target:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(graph.get(node, ()))
    return False


def dependents(nodes: Mapping[str, Any], target: str) -> set[str]:
    """Every view or gate whose preparation (transitively) needs ``target``."""
    reverse: dict[str, set[str]] = {}
    for node, needs in edges(nodes).items():
        for need in needs:
            reverse.setdefault(need, set()).add(node)
    seen: set[str] = set()
    stack = list(reverse.get(target, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(reverse.get(node, ()))
    return seen


def cycle(nodes: Mapping[str, Any]) -> list[str] | None:
    """One prerequisite cycle (view and gate ids in order), or None."""
    graph = edges(nodes)
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None
