"""Recursive Environment Scaling (RES): harder environments with the same task, facts and verifier.

    from envtrain.scale import apply_plan, validate, Plan, ProgrammaticProposer
    plan, child = ProgrammaticProposer(seed=0).propose(parent, [])
    result = validate(parent, child or apply_plan(parent, plan), plan)   # named checks, diagnostics

Modules: ``model`` (the access structure, as data), ``analysis`` (which original records a
resource has), ``operators/`` (the 17 operators, and envtrain's tool-gating operators beyond
them), ``build``, ``gates`` and ``docs`` (tools, tables, gated tools and access docs from the
structure), ``traverse`` (the public restoration), ``plan``, ``apply``, ``validate``,
``propose`` and ``llm`` (proposers), ``lineage`` (recursion, storage, resume), ``evaluate`` (target
evaluation at selected nodes, the stopping rule), ``report``, ``cli``.
"""

from envtrain.scale.apply import apply_plan, registry_of
from envtrain.scale.lineage import ScaleConfig, extend, run_lineage, scale_all
from envtrain.scale.operators import BASIC, EXTENSIONS, ORDER, PlanError, library
from envtrain.scale.plan import Plan, PlanStep, plan_schema
from envtrain.scale.propose import ProgrammaticProposer
from envtrain.scale.validate import CHECKS, Validation, validate

__all__ = [
    "BASIC",
    "CHECKS",
    "EXTENSIONS",
    "ORDER",
    "Plan",
    "PlanError",
    "PlanStep",
    "ProgrammaticProposer",
    "ScaleConfig",
    "Validation",
    "apply_plan",
    "extend",
    "library",
    "plan_schema",
    "registry_of",
    "run_lineage",
    "scale_all",
    "validate",
]
