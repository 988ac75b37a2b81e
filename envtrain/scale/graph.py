"""The prerequisite graph between views: reading view A needs view B when a layer of A binds a
token B publishes, or A's access key is looked up in a directory that B is part of.

The proposer keeps it acyclic when it composes dependencies; validation rejects a cycle (a
preparation that can never become ready) under the ``termination`` check.
"""

from __future__ import annotations

from typing import Mapping

from envtrain.scale.model import Leaf, leaf_ids


def edges(leaves: Mapping[str, Leaf]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for leaf in leaves.values():
        needs: set[str] = set()
        for layer in leaf.layers:
            needs.update(b.source for b in getattr(layer, "requires", ()))
            if layer.kind == "keygate" and layer.directory is not None:
                needs.update(leaf_ids(layer.directory))
        out[leaf.id] = needs
    return out


def depends_on(leaves: Mapping[str, Leaf], start: str, target: str) -> bool:
    """Whether reading ``start`` (transitively) needs ``target``."""
    graph = edges(leaves)
    seen, stack = set(), list(graph.get(start, ()))
    while stack:
        node = stack.pop()
        if node == target:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(graph.get(node, ()))
    return False


def dependents(leaves: Mapping[str, Leaf], target: str) -> set[str]:
    """Every view whose reading (transitively) needs ``target``."""
    reverse: dict[str, set[str]] = {}
    for node, needs in edges(leaves).items():
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


def cycle(leaves: Mapping[str, Leaf]) -> list[str] | None:
    """One prerequisite cycle (view ids in order), or None."""
    graph = edges(leaves)
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
