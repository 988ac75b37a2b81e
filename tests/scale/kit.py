"""Shared helpers for the scale tests: load an example, apply a plan, validate the child."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from envtrain.core import Environment
from envtrain.scale.apply import apply_plan
from envtrain.scale.operators import Operator
from envtrain.scale.plan import Plan
from envtrain.scale.validate import Validation, validate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str) -> Environment:
    return Environment.load(EXAMPLES / f"{name}.yaml")


def plan_for(parent: Environment, *steps: dict[str, Any], release: bool = False) -> Plan:
    return Plan(parent=parent.id, steps=tuple(steps), release_dependencies=release)


def scale(
    parent: Environment, *steps: dict[str, Any], operators: Mapping[str, Operator] | None = None, release: bool = False
) -> tuple[Environment, Plan, Validation]:
    plan = plan_for(parent, *steps, release=release)
    child = apply_plan(parent, plan, operators=operators)
    return child, plan, validate(parent, child, plan, operators=operators)


def step(operator: str, target: str, binds: tuple[str, ...] = (), **params: Any) -> dict[str, Any]:
    return {"operator": operator, "target": target, "params": params, "binds": list(binds)}
