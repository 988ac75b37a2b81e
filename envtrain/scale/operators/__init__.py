"""The 17 operators of RES App. D.1, in its order (the Basic six, then the other eleven), and
envtrain's gating operators beyond them (``EXTENSIONS``, see ``gating``)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from envtrain.scale.operators import access, encoding, gating, partition, structure
from envtrain.scale.operators.base import Operator, PlanError, ToolTarget, Work

_BY_NAME = MappingProxyType(
    {
        op.name: op
        for op in access.OPERATORS + encoding.OPERATORS + partition.OPERATORS + structure.OPERATORS + gating.OPERATORS
    }
)
ORDER = (
    "sharding",
    "pagination",
    "summary-to-detail access",
    "field references",
    "numeric re-encoding",
    "export preparation",
    "evidence dispersion",
    "namespace bridges",
    "source routing",
    "candidate intersection",
    "dependent lookups",
    "multi-source exports",
    "external-schema views",
    "archive views",
    "version selection",
    "index reconstruction",
    "staged release",
)
BASIC = ORDER[:6]
# envtrain's addition beyond RES's 17: gates on original tools whose records cannot be moved
# (BFCL's handler tools, write tools). Part of the full library; not of the Basic ablation.
EXTENSIONS = ("tool gating", "tool manifests", "staged tool activation")


def library(name: str = "full") -> Mapping[str, Operator]:
    """The operator library by name: ``full`` (RES's 17, then envtrain's gating operators) or
    ``basic`` (the six of the Basic ablation)."""
    names = {"full": ORDER + EXTENSIONS, "basic": BASIC}.get(name)
    if names is None:
        raise ValueError(f"unknown library {name!r} (full or basic)")
    return MappingProxyType({n: _BY_NAME[n] for n in names})


def origin(name: str) -> str:
    """Where an operator comes from: RES App. D.1, or envtrain's addition beyond it."""
    op = _BY_NAME.get(name)
    return op.origin if op is not None else "unknown"


__all__ = ["BASIC", "EXTENSIONS", "ORDER", "Operator", "PlanError", "ToolTarget", "Work", "library", "origin"]
