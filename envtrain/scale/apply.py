"""Apply(E_k, Π_k): the candidate child of a parent environment under a plan (RES Eq. 2).

The child keeps the parent's request, persona, verifier, original docs, original tables and files
and every original write tool (gated tools gain their gates' preconditions, nothing else); it
loses the original read tools of each resource a plan touches for the first time, gains the
generated ``res`` app (views, hidden state, access tools, gate preparations) and the access docs,
and its reference solution becomes the public restoration of the resources the task needs and
the opening of the gates its tools need, followed by the original solution's remaining calls. A
pure function of (parent, plan).
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import ValidationError

from envtrain.core.app import App
from envtrain.core.env import Call, Environment, Provenance, PublicDoc, WorldState, format_validation_error
from envtrain.core.errors import SpecError
from envtrain.core.io import content_hash
from envtrain.core.schema import Schema
from envtrain.core.session import Runtime
from envtrain.core.world import World
from envtrain.scale.analysis import Original, original_resources
from envtrain.scale.build import leaf_payloads, res_app, world_tables
from envtrain.scale.docs import access_docs
from envtrain.scale.gates import gate_rows, regate, ungated_tools, with_gates
from envtrain.scale.model import APP, Registry
from envtrain.scale.operators import Operator
from envtrain.scale.operators import library as operator_library
from envtrain.scale.operators.base import PlanError, ToolTarget, Work
from envtrain.scale.plan import Plan, PlanStep
from envtrain.scale.traverse import Restored, restore_all


def registry_of(env: Environment) -> Registry | None:
    data = env.provenance.settings.get("res")
    return Registry.model_validate(data) if data else None


def depth_of(env: Environment) -> int:
    """The lineage depth: 0 for a root (whatever its own provenance says), else the recorded depth."""
    return env.provenance.depth if env.provenance.settings.get("res") else 0


def contract_hash(env: Environment, registry: Registry | None) -> str:
    """The protected contract: objective, persona, verifier, the task's own docs, the facts (every
    original table, file and session value) and the original apps' entities and write tools, each
    as it was before the registry's gates were put on it (``gates.strip_gates``); without gates,
    the hash is the one it always was."""
    docs = env.docs[: registry.original_docs] if registry else env.docs
    apps = [a for a in env.apps if a.name != APP]
    return content_hash(
        {
            "request": env.request,
            "persona": env.persona,
            "verifier": env.verifier.model_dump(mode="json"),
            "docs": [d.model_dump(mode="json") for d in docs],
            "apps": {
                a.name: {
                    "entities": {k: e.model_dump(mode="json") for k, e in a.entities.items()},
                    "writes": [t.model_dump(mode="json") for t in ungated_tools(a, registry) if t.writes],
                }
                for a in apps
            },
            "world": {
                "base_time": env.world.base_time,
                "session": env.world.session,
                "files": env.world.files,
                "tables": {k: v for k, v in env.world.tables.items() if not k.startswith(APP + ".")},
            },
        }
    )


def init_registry(env: Environment, contract: str | None = None) -> Registry:
    """A root's registry; ``contract``: its protected-contract hash when the caller has it already."""
    if any(a.name == APP for a in env.apps):
        raise PlanError(f"the environment already has an app named {APP!r}, which scaling reserves")
    return Registry(
        root=env.id,
        contract=contract or contract_hash(env, None),
        original_solution=env.reference_solution,
        original_docs=len(env.docs),
    )


def parent_world(env: Environment) -> World:
    return World.create(Schema(env.apps), base_time=env.world.base_time, tables=env.world.tables, files=env.world.files)


def start_work(
    parent: Environment, *, release: bool = False, cache: dict[str, Any] | None = None, facts: Runtime | None = None
) -> Work:
    """The construction state for a child of ``parent`` (its registry, view rows and originals).

    ``cache``: a dict the caller owns, to share the analysis of the parent's untouched resources
    between several Applies on the same parent (the proposer's lookahead); a root's contract hash
    may be given there as ``contract:<id>``.
    ``facts``: a compiled environment whose W0 holds exactly the parent's facts (the caller has
    checked that its protected contract hashes as the parent's); its W0 is analysed instead of
    building the parent's world a second time."""
    cache = {} if cache is None else cache
    registry = registry_of(parent) or init_registry(parent, cache.get(f"contract:{parent.id}"))
    payloads = leaf_payloads(registry, parent.world.tables)

    def originals() -> dict[str, Original]:
        key = f"originals:{parent.id}"
        if key not in cache:
            world = parent_world(parent) if facts is None else World.deserialize(facts.schema, facts.w0)
            try:
                cache[key] = original_resources(parent, world, registry)
            finally:
                world.close()
        return cache[key]

    gold = {call.tool for call in registry.original_solution}
    tools = {
        t.name: ToolTarget(t.name, app.name, t.family, t.handler, t.name in gold)
        for app in parent.apps
        if app.name != APP
        for t in app.tools
    }
    return Work(
        registry, payloads, salt=parent.id, depth=depth_of(parent) + 1, release=release, originals=originals, tools=tools
    )


def apply_step(work: Work, step: PlanStep, operators: Mapping[str, Operator], index: int = 1) -> None:
    """One step of a plan on the construction state; PlanError names the step and why."""
    op = operators.get(step.operator)
    if op is None:
        raise PlanError(f"step {index}: unknown operator {step.operator!r} (operators: {', '.join(operators)})")
    try:
        leaf = work.tool_target(step.target) if op.acts_on == "tool" else work.target(step.target)
        why = op.applies(work, leaf)
        if why is not None:
            what = f"tool {leaf.name}" if op.acts_on == "tool" else f"{leaf.id} ({leaf.name})"
            raise PlanError(f"{op.name} does not apply to {what}: {why}")
        params = op.Params.model_validate(step.params)
        if len(step.binds) > op.max_binds:
            raise PlanError(f"{op.name} takes at most {op.max_binds} binding(s), got {len(step.binds)}")
        binds = [] if work.release else [work.binding(spec, leaf, n) for n, spec in enumerate(step.binds, 1)]
        op.apply(work, leaf, params, binds)
    except PlanError as exc:
        raise PlanError(f"step {index} ({step.operator} on {step.target}): {exc}") from None
    except ValidationError as exc:  # the operator's parameter model
        raise PlanError(
            f"step {index} ({step.operator} on {step.target}): bad parameters: {format_validation_error(exc)}"
        ) from None


def apply_plan(
    parent: Environment, plan: Plan, *, operators: Mapping[str, Operator] | None = None, cache: dict[str, Any] | None = None
) -> Environment:
    """The candidate child. Raises PlanError when the plan cannot be applied to this parent."""
    return apply_compiled(parent, plan, operators=operators, cache=cache)[0]


def apply_compiled(
    parent: Environment,
    plan: Plan,
    *,
    operators: Mapping[str, Operator] | None = None,
    cache: dict[str, Any] | None = None,
    compile: bool = False,
    facts: Runtime | None = None,
    claimed: Runtime | None = None,
) -> tuple[Environment, Restored | None]:
    """Apply; with ``compile``, also one fresh session's restoration of every resource, which
    validation reuses for its records check when the candidate is the child it checks.

    Validation passes that child, compiled, as ``claimed``: when the candidate equals that document
    but for its reference solution, the claimed runtime is the candidate's own (the replay's hash
    comparison then decides), so the candidate is not compiled twice; and as ``facts`` when the
    child's protected contract (its facts included) hashes as the parent's."""
    if plan.parent != parent.id:
        raise PlanError(f"the plan is for environment {plan.parent}, not {parent.id}")
    operators = operators if operators is not None else operator_library("full")
    work = start_work(parent, release=plan.release_dependencies, cache=cache, facts=facts)
    for i, step in enumerate(plan.steps, 1):
        apply_step(work, step, operators, i)
    return build_child(parent, work.to_registry(), work.payloads, plan, work.depth, compile=compile, claimed=claimed)


def build_child(
    parent: Environment,
    registry: Registry,
    payloads: dict[str, list[dict[str, Any]]],
    plan: Plan,
    depth: int,
    *,
    compile: bool = False,
    claimed: Runtime | None = None,
) -> tuple[Environment, Restored | None]:
    removed = {name for r in registry.resources for name in r.removed_tools}
    parent_registry = registry_of(parent)
    parent_gates = parent_registry.gates if parent_registry is not None else ()
    # The original apps are already validated: pass them on as objects (only the generated app is
    # parsed), which keeps an Apply cheap however many apps and rules the parent has.
    apps: list[Any] = []
    for app in parent.apps:
        if app.name == APP:
            continue
        app = regate(app, parent_gates, registry.gates)
        if removed & {t.name for t in app.tools}:
            caps = {k: tuple(t for t in v if t not in removed) for k, v in app.capabilities.items()}
            app = app.model_copy(
                update={
                    "tools": tuple(t for t in app.tools if t.name not in removed),
                    "capabilities": {k: v for k, v in caps.items() if v},
                }
            )
        apps.append(app)
    generated = with_gates(res_app(registry), registry)
    if generated is not None:
        apps.append(generated)
    tables = {k: v for k, v in parent.world.tables.items() if not k.startswith(APP + ".")}
    tables.update(world_tables(registry, payloads))
    tables.update(gate_rows(registry))
    world = WorldState.model_construct(
        base_time=parent.world.base_time, tables=tables, files=parent.world.files, session=parent.world.session
    )
    kept = [c for c in registry.original_solution if c.tool not in removed]
    settings = {k: v for k, v in parent.provenance.settings.items() if k not in ("res", "plan")}
    settings.update({"res": registry.dump(), "plan": plan.hash})
    data = {
        "apps": apps,
        "world": world,
        "request": parent.request,
        "persona": parent.persona,
        "docs": list(parent.docs[: registry.original_docs]) + access_docs(registry),
        "verifier": parent.verifier,
        "reference_solution": kept,
        "provenance": {
            "source": "scale",
            "atoms": list(parent.provenance.atoms),
            "parent": parent.id,
            "depth": depth,
            "plan": [s.model_dump(mode="json") for s in plan.steps],
            "settings": settings,
        },
    }
    try:
        draft = _draft(data)
        needed = any(r.needed for r in registry.resources) or bool(registry.gates)
        if claimed is not None and _same_but_solution(draft, claimed.env):
            runtime: Runtime | None = claimed
        else:
            runtime = Runtime(draft) if needed or compile else None
        restored = restore_all(runtime, registry, needed_only=not compile) if runtime is not None else None
    except (ValidationError, SpecError) as exc:
        text = format_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise PlanError(f"the candidate is not a valid environment: {text}") from None
    child = with_solution(draft, (restored.prefix if restored else []) + kept)
    return child, restored if compile else None


def _draft(data: dict[str, Any]) -> Environment:
    """The child before its reference solution is known. Only the parts Apply generated are
    validated (the parent's own parts already were), and no id is computed: ``with_solution``
    computes the child's."""
    apps = tuple(a if isinstance(a, App) else App.model_validate(a) for a in data["apps"])
    docs = tuple(d if isinstance(d, PublicDoc) else PublicDoc.model_validate(d) for d in data["docs"])
    return Environment.model_construct(
        id="",
        apps=apps,
        world=data["world"],
        request=data["request"],
        persona=dict(data["persona"]),
        docs=docs,
        verifier=data["verifier"],
        reference_solution=tuple(data["reference_solution"]),
        provenance=Provenance.model_validate(data["provenance"]),
    )


_PARTS = ("apps", "world", "request", "persona", "docs", "verifier", "provenance")


def _same_but_solution(a: Environment, b: Environment) -> bool:
    return all(getattr(a, name) == getattr(b, name) for name in _PARTS)


def with_solution(env: Environment, calls: list[Call]) -> Environment:
    """``env`` with another reference solution, its id recomputed (no second full validation)."""
    new = env.model_copy(update={"reference_solution": tuple(calls), "id": ""})
    object.__setattr__(new, "id", content_hash(new.model_dump(mode="json", exclude={"id"})))
    return new
