"""The 17 operators of RES App. D.1, in its order: the Basic six, then the other eleven."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from envtrain.scale.operators import access, encoding, partition, structure
from envtrain.scale.operators.base import Operator, PlanError, Work

_BY_NAME = MappingProxyType(
    {op.name: op for op in access.OPERATORS + encoding.OPERATORS + partition.OPERATORS + structure.OPERATORS}
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


def library(name: str = "full") -> Mapping[str, Operator]:
    """The operator library by name: ``full`` (17) or ``basic`` (the six of the Basic ablation)."""
    names = {"full": ORDER, "basic": BASIC}.get(name)
    if names is None:
        raise ValueError(f"unknown library {name!r} (full or basic)")
    return MappingProxyType({n: _BY_NAME[n] for n in names})


__all__ = ["BASIC", "ORDER", "Operator", "PlanError", "Work", "library"]
