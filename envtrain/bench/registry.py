"""Benchmarks by name, as the CLI writes them: ``make_adapter("bfcl-multi-turn:base")``.

Each adapter module is imported only when its spec is asked for, so naming one never loads the
others' packages (bfcl-eval, reasoning-gym).
"""

from __future__ import annotations

from envtrain.bench.types import Adapter

SPEC_FORMS = "bfcl-multi-turn[:CATEGORY[,CATEGORY]], reasoning-gym:NAME[,NAME][:LEVELS], envs:DIR"


def make_adapter(spec: str, *, limit: int | None = None, seed: int = 0) -> Adapter:
    """The adapter ``spec`` names. ``limit``: at most this many tasks (per category for BFCL, per
    level for reasoning-gym, where it is the dataset size, 20 by default)."""
    kind, sep, arg = spec.strip().partition(":")
    arg = arg.strip()
    if kind == "bfcl-multi-turn":
        from envtrain.bench.bfcl.adapter import BFCLAdapter
        from envtrain.bench.bfcl.data import CATEGORIES

        categories = [c.strip() for c in arg.split(",") if c.strip()] if sep else list(CATEGORIES)
        return BFCLAdapter(categories, limit=limit)
    if kind == "reasoning-gym" and arg:
        from envtrain.bench.reasoning_gym import ReasoningGymAdapter, parse_levels

        name, sep2, levels = arg.partition(":")
        return ReasoningGymAdapter(name, parse_levels(levels) if sep2 else None, size=limit or 20, seed=seed)
    if kind == "envs" and arg:
        from envtrain.bench.envs import EnvsAdapter

        return EnvsAdapter(arg, limit=limit)
    raise ValueError(f"unknown benchmark {spec!r}: use one of {SPEC_FORMS}")
