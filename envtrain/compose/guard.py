"""The build-time guard against LegoEnv's most common fault (52% of failures, App. K): a verifier
that demands a value neither the request, the rule (its carrier) nor the world states.

A V+ literal is suspect when the agent would have to choose it (it equals, or is part of, an
argument of the reference solution's calls) and yet no stated text names it (the request, the
carrier and reference texts, the persona: matched as a whole word, ignoring case) and W0 holds it
nowhere (as a value, as a whole word of a text, or inside a text for ``contains``). Values a tool sets by itself (a status
such as 'escalated') are not the agent's choice and pass.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from envtrain.core.env import Environment
from envtrain.core.expr import Lit, walk
from envtrain.compose.context import display


def _scalars(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _scalars(v)
    elif value is not None:
        yield value


def _norm(value: Any) -> str:
    return display(value).lower() if not isinstance(value, str) else value.lower()


def unstated_values(env: Environment, stated: Iterable[str]) -> list[str]:
    """One line per V+ literal nobody stated: ``assertion name: value``. Empty when the verifier is clean."""
    text = "\n".join(stated).lower()
    world_values: set[str] = set()
    world_texts: list[str] = []
    for rows in env.world.tables.values():
        for row in rows:
            for v in _scalars(row):
                world_values.add(_norm(v))
                if isinstance(v, str):
                    world_texts.append(v.lower())
    for path, content in env.world.files.items():
        world_values.add(path.lower())
        world_texts.extend((path.lower(), content.lower()))
    world_text = "\n".join(world_texts)
    arguments = [_norm(v) for call in env.reference_solution for v in _scalars(call.arguments)]
    faults = []
    for assertion in env.verifier.positive:
        for clause in assertion.where:
            for node in walk(clause):
                if not isinstance(node, Lit):
                    continue
                for value in node.value if isinstance(node.value, tuple) else (node.value,):
                    if value is None or isinstance(value, bool):
                        continue
                    needle = _norm(value)
                    chosen = any(needle == a or (isinstance(value, str) and needle in a) for a in arguments)
                    if not chosen or _stated(needle, text):
                        continue
                    if needle in world_values:
                        continue
                    if clause.op in ("contains", "starts with", "ends with") and any(needle in t for t in world_texts):
                        continue
                    if isinstance(value, str) and _stated(needle, world_text):  # a whole word of some W0 text
                        continue
                    if _composed(needle, text, world_texts):
                        continue
                    faults.append(f"{assertion.name or assertion.describe()}: {display(value)!r}")
    return faults


def _composed(needle: str, text: str, world_texts: list[str]) -> bool:
    """A path or phrase built from stated parts and W0's own values ("hold/" + the file's name)."""
    parts = [p for p in re.split(r"[/\s]+", needle) if p]
    if len(parts) < 2:
        return False
    return all(_stated(p, text) or any(p in t for t in world_texts) for p in parts)


def _stated(needle: str, text: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(needle) + r"(?![\w])", text) is not None
