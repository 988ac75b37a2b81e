"""Validation of a candidate child (RES §3.3, App. A): v_k = V(C_{k+1}, E_k, Π_k, Ẽ_{k+1}; ξ_k).

Named checks, each with its own diagnostics:

- ``lineage``: the child names its parent, depth and plan; the registry continues the parent's;
- ``contract``: objective, persona, verifier, the task's docs, facts and write tools are unchanged;
- ``replay``: Apply(parent, plan) rebuilds a candidate with the child's hash;
- ``references``: every view, tool and token the access structure names exists, and every
  reference, mapping, route, key and detail met during restoration resolves;
- ``termination``: the prerequisite graph (views and gates) is acyclic and every preparation
  finishes within a bound of public calls;
- ``records``: a model-free traversal in a fresh session, through public tools only, recovers
  every original record exactly once (no loss, no duplication, nothing altered);
- ``bypass``: the original read path is gone, gated views refuse reads without preparation, and
  each gated tool, called with its gold arguments while its gate is closed, refuses;
- ``admission``: the five admission conditions hold with the extended reference solution.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field

from envtrain.core.admission import check_admission
from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.core.io import content_hash
from envtrain.core.session import Runtime, Session
from envtrain.scale.analysis import FILE_READ_HANDLERS, READ_FAMILIES, Original, canonical_records, current_records
from envtrain.scale.apply import apply_compiled, contract_hash, depth_of, registry_of
from envtrain.scale.build import fetch_tool, key_arg, leaf_payloads
from envtrain.scale.gates import GATES, gate_guard, gold_call
from envtrain.scale.graph import cycle, depends_on
from envtrain.scale.model import APP, Registry, leaf_ids
from envtrain.scale.operators import Operator
from envtrain.scale.operators.base import PlanError
from envtrain.scale.plan import Plan
from envtrain.scale.traverse import Restored, Traversal, TraversalError, call_bound, restore_all

CHECKS = ("lineage", "contract", "replay", "references", "termination", "records", "bypass", "admission")


class CheckResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    messages: tuple[str, ...] = ()
    seconds: float = 0.0


class Validation(BaseModel):
    model_config = ConfigDict(frozen=True)

    parent: str
    child: str
    plan: str
    accepted: bool
    checks: tuple[CheckResult, ...]
    evidence: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.checks if not c.passed)

    def diagnostics(self) -> list[str]:
        return [f"{c.name}: {m}" for c in self.checks if not c.passed for m in c.messages]


class _Run:
    def __init__(self) -> None:
        self.results: dict[str, CheckResult] = {}

    def record(self, name: str, messages: list[str], seconds: float = 0.0) -> None:
        old = self.results.get(name)
        if old is not None:
            messages = list(old.messages) + messages
            seconds += old.seconds
        self.results[name] = CheckResult(name=name, passed=not messages, messages=tuple(messages), seconds=round(seconds, 6))


def validate(
    parent: Environment,
    child: Environment,
    plan: Plan,
    *,
    operators: Mapping[str, Operator] | None = None,
    admission_budget: int = 400,
    share: bool = True,
) -> Validation:
    """Run every check; each failed one names itself and says why.

    ``share``: checks reuse each other's work on the same documents: the child is compiled once
    (the replay takes it as the rebuilt candidate's runtime when the two agree, and reads the
    parent's facts from it when the contract says they are the parent's), and the records check
    reuses the replay's fresh-session traversal and its reading of the original records. With
    ``share=False`` every check computes its own evidence (the parent's world is built, the
    rebuilt candidate compiled and traversed, the records read again): slower, same results."""
    start = time.perf_counter()
    run = _Run()
    evidence: dict[str, Any] = {"reference_length": len(child.reference_solution)}
    parent_registry = registry_of(parent)
    # The parent's protected contract, hashed once: the lineage and contract checks compare it, and
    # for a root it is also what the replay's fresh registry records.
    want = contract_hash(parent, parent_registry)
    cache: dict[str, Any] = {f"contract:{parent.id}": want} if parent_registry is None and share else {}
    registry = _timed(run, "lineage", lambda: _lineage(parent, child, plan, parent_registry, want))
    same_facts = _timed(run, "contract", lambda: _contract(child, parent, registry, want))
    # The child is compiled once, first: the replay uses it as the rebuilt candidate's runtime
    # when the two documents agree, and (its facts being the parent's) to read the parent's facts.
    t = time.perf_counter()
    try:
        runtime: Runtime | None = Runtime(child)
    except SpecError as exc:
        runtime = None
        run.record("admission", [f"the child does not load: {exc}"])
    run.record("replay", [], time.perf_counter() - t)
    claimed = runtime if share else None
    facts = runtime if share and same_facts else None
    restored = _timed(run, "replay", lambda: _replay(parent, child, plan, operators, evidence, claimed, facts, cache))
    # Resources first transformed by this plan were analysed on the child's own W0 (same facts):
    # their records need not be read and encoded a second time.
    fresh = cache.get(f"originals:{parent.id}", {}) if facts is not None else {}
    if not share:
        restored = None
    if registry is not None and runtime is not None:
        _structure(run, child, registry)
        _restore(run, child, registry, runtime, evidence, restored, fresh)
        _timed(run, "bypass", lambda: _bypass(child, registry, runtime))
    elif registry is None:
        for name in ("references", "termination", "records", "bypass"):
            run.record(name, ["not run: the child carries no access registry"])
    if runtime is not None:
        t = time.perf_counter()
        report = check_admission(child, search_budget=admission_budget, runtime=runtime)
        evidence["admission"] = report.to_dict()
        run.record(
            "admission",
            [f"condition {f.condition}: {f.assertion + ': ' if f.assertion else ''}{f.reason}" for f in report.failures],
            time.perf_counter() - t,
        )
    for name in CHECKS:
        run.results.setdefault(name, CheckResult(name=name, passed=True))
    checks = tuple(run.results[name] for name in CHECKS)
    return Validation(
        parent=parent.id,
        child=child.id,
        plan=plan.hash,
        accepted=all(c.passed for c in checks),
        checks=checks,
        evidence=evidence,
        seconds=round(time.perf_counter() - start, 6),
    )


def _timed(run: _Run, name: str, fn) -> Any:
    t = time.perf_counter()
    messages: list[str] = []
    try:
        result = fn()
        if isinstance(result, tuple):
            result, messages = result
        elif isinstance(result, list):
            result, messages = None, result
    except Exception as exc:  # a check that cannot run fails, with the reason
        result, messages = None, [f"{type(exc).__name__}: {exc}"]
    run.record(name, messages, time.perf_counter() - t)
    return result


def _lineage(
    parent: Environment, child: Environment, plan: Plan, parent_registry: Registry | None, parent_contract: str
) -> tuple[Registry | None, list[str]]:
    out = []
    prov = child.provenance
    if plan.parent != parent.id:
        out.append(f"the plan is for {plan.parent}, the parent is {parent.id}")
    if prov.parent != parent.id:
        out.append(f"the child names parent {prov.parent}, not {parent.id}")
    if prov.source != "scale":
        out.append(f"the child's source is {prov.source!r}, not 'scale'")
    if prov.depth != depth_of(parent) + 1:
        out.append(f"the child is at depth {prov.depth}, the parent at {depth_of(parent)}")
    if list(prov.plan) != [s.model_dump(mode="json") for s in plan.steps] or prov.settings.get("plan") != plan.hash:
        out.append("the child does not record this plan")
    try:
        registry = registry_of(child)
    except ValueError as exc:
        return None, out + [f"the child's access registry does not parse: {str(exc)[:200]}"]
    if registry is None:
        return None, out + ["the child carries no access registry"]
    root = parent_registry.root if parent_registry else parent.id
    contract = parent_registry.contract if parent_registry else parent_contract
    if registry.root != root:
        out.append(f"the registry names root {registry.root}, the lineage's root is {root}")
    if registry.contract != contract:
        out.append("the registry's protected-contract hash is not the root's")
    if parent_registry is not None and registry.original_solution != parent_registry.original_solution:
        out.append("the registry's original reference solution differs from the parent's")
    return registry, out


def _contract(child: Environment, parent: Environment, registry: Registry | None, want: str) -> tuple[bool, list[str]]:
    """The messages, and whether the child's protected contract (its facts included) is the
    parent's (``want``)."""
    out = []
    if child.request != parent.request:
        out.append("the request changed")
    if child.verifier.model_dump_json() != parent.verifier.model_dump_json():
        out.append("the verifier changed")
    if child.persona != parent.persona:
        out.append("the persona changed")
    same = registry is not None and contract_hash(child, registry) == want
    if not same:
        out.append("the protected contract (objective, verifier, task docs, facts, write tools) does not hash as the parent's")
    if registry is not None and want != registry.contract:
        out.append("the parent's protected contract is not the root's")
    return same, out


def _replay(
    parent: Environment,
    child: Environment,
    plan: Plan,
    operators,
    evidence: dict[str, Any],
    claimed: Runtime | None,
    facts: Runtime | None,
    cache: dict[str, Any],
) -> tuple[Restored | None, list[str]]:
    """Rebuild the candidate from the frozen parent; on a match, its restoration serves the
    records check: it was traversed in a fresh session of this very document."""
    try:
        rebuilt, restored = apply_compiled(
            parent, plan, operators=operators, cache=cache, compile=True, facts=facts, claimed=claimed
        )
    except PlanError as exc:
        return None, [f"the plan does not apply to the parent: {exc}"]
    evidence["replay"] = rebuilt.id
    if rebuilt.id == child.id:
        return restored, []
    parts = [
        name
        for name in ("apps", "world", "docs", "reference_solution", "provenance", "verifier", "request")
        if getattr(rebuilt, name) != getattr(child, name)
    ]
    return None, [f"replaying the plan on the parent gives {rebuilt.id}, not {child.id} (differs in: {', '.join(parts) or 'id'})"]


def _structure(run: _Run, child: Environment, registry: Registry) -> None:
    """Static: every named view, tool and token exists; no prerequisite cycle."""
    refs: list[str] = []
    leaves = {leaf.id: leaf for leaf in registry.leaves}
    gates = {gate.id: gate for gate in registry.gates}
    res = next((a for a in child.apps if a.name == APP), None)
    tools = {t.name for a in child.apps for t in a.tools}
    entities = set(res.entities) if res else set()
    for resource in registry.resources:
        for lid in leaf_ids(resource.tree):
            if lid not in leaves:
                refs.append(f"{resource.label}: the tree names view {lid}, which does not exist")
    for leaf in registry.leaves:
        if leaf.name not in entities:
            refs.append(f"view {leaf.id} has no table {leaf.name}")
        if fetch_tool(leaf) not in tools:
            refs.append(f"view {leaf.id} has no fetch tool {fetch_tool(leaf)}")
        for layer in leaf.layers:
            for b in getattr(layer, "requires", ()):
                if not _publishes(b, leaves, gates):
                    refs.append(f"{fetch_tool(leaf)}: {b.arg} binds a {b.layer} of {b.source}, which does not exist")
            if layer.kind == "keygate" and layer.directory is not None:
                refs.extend(
                    f"{fetch_tool(leaf)}: its key directory names view {lid}, which does not exist"
                    for lid in leaf_ids(layer.directory)
                    if lid not in leaves
                )
    by_app = {a.name: {t.name for t in a.tools} for a in child.apps}
    rows = {r.get("gate") for r in child.world.tables.get(f"{APP}.{GATES}", [])}
    for gate in registry.gates:
        if gate.tool not in by_app.get(gate.app, set()):
            refs.append(f"gate {gate.id} holds tool {gate.app}.{gate.tool}, which does not exist")
        if gate.prep not in tools:
            refs.append(f"gate {gate.id} has no preparation tool {gate.prep}")
        if gate.id not in rows:
            refs.append(f"gate {gate.id} has no row in {APP}.{GATES}")
        for b in gate.requires:
            if not _publishes(b, leaves, gates):
                refs.append(f"{gate.prep}: {b.arg} binds a {b.layer} of {b.source}, which does not exist")
    for doc in child.docs[registry.original_docs :]:
        for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", doc.body):
            if name not in tools:
                refs.append(f"doc {doc.title!r} names tool {name}, which does not exist")
    run.record("references", refs)
    loop = cycle({**leaves, **gates})
    run.record("termination", [f"prerequisite cycle: {' -> '.join(loop)}"] if loop else [])


def _publishes(binding, leaves: Mapping[str, Any], gates: Mapping[str, Any]) -> bool:
    """Whether the view or gate a binding names exists and publishes that kind of token."""
    if binding.layer == "gate":
        return binding.source in gates
    return binding.source in leaves and leaves[binding.source].layer(binding.layer) is not None


def _restore(
    run: _Run,
    child: Environment,
    registry: Registry,
    runtime: Runtime,
    evidence: dict[str, Any],
    restored: Restored | None,
    fresh: Mapping[str, Original],
) -> None:
    """Every resource's records, read from the child's W0, against what a fresh session's public
    traversal recovered (the replay's, when the replay rebuilt this very child). ``fresh``: the
    resources the replay analysed on the child's W0, their records already read."""
    t = time.perf_counter()
    if restored is None:
        restored = restore_all(runtime, registry)
    lost: list[str] = []
    counts: dict[str, int] = {}
    with runtime.session() as facts_session:  # W0, where the original records are read
        for resource in registry.resources:
            original = fresh.get(resource.key)
            if original is not None and (original.entity, original.fields, original.scope) == (
                resource.entity,
                resource.fields,
                resource.scope,
            ):
                expected = original.canonical  # the same rows of the same W0, read once
            else:
                expected = canonical_records(current_records(child, facts_session.world, resource), resource.fields)
            if content_hash(sorted(expected)) != resource.records_hash:
                run.record("contract", [f"{resource.label}: the original records changed"])
            error = restored.errors.get(resource.key)
            if error is not None:
                run.record(error.check, [f"{resource.label}: {error.message}"])
                lost.append(f"{resource.label}: not restored (see {error.check})")
                continue
            got = restored.records[resource.key]
            counts[resource.key] = len(got)
            lost.extend(_compare(resource, expected, got))
    for gate in registry.gates:
        error = restored.errors.get(f"gate:{gate.id}")
        if error is not None:
            run.record(error.check, [f"gate {gate.id} of {gate.tool}: {error.message}"])
    if registry.gates:
        evidence["gates"] = len(registry.gates)
    evidence["restore_calls"] = restored.calls
    evidence["call_bound"] = restored.bound
    evidence["records"] = counts
    evidence["views"] = len(registry.leaves)
    run.record("records", lost, time.perf_counter() - t)
    run.record("references", [])
    run.record("termination", [])


def _compare(resource, expected: list[str], got: list[dict[str, Any]]) -> list[str]:
    """``expected``: the records' canonical forms; ``got``: the restored rows."""
    names = {n for n, _ in resource.fields}
    out = []
    odd = [sorted(set(r) ^ names) for r in got if set(r) != names]
    if odd:
        out.append(f"{resource.label}: restored rows have other columns than the records ({odd[0]})")
    want = Counter(expected)
    have = Counter(canonical_records(got, resource.fields))
    missing, extra = want - have, have - want
    duplicated = {k: n for k, n in extra.items() if k in want}
    unknown = {k: n for k, n in extra.items() if k not in want}
    if missing:
        out.append(f"{resource.label}: {sum(missing.values())} record(s) lost, e.g. {_short(next(iter(missing)))}")
    if duplicated:
        out.append(f"{resource.label}: {sum(duplicated.values())} record(s) duplicated, e.g. {_short(next(iter(duplicated)))}")
    if unknown:
        out.append(
            f"{resource.label}: {sum(unknown.values())} restored row(s) are not records, e.g. {_short(next(iter(unknown)))}"
        )
    return out


def _short(text: str) -> str:
    return text if len(text) <= 160 else text[:157] + "..."


def _bypass(child: Environment, registry: Registry, runtime: Runtime) -> list[str]:
    out = []
    schema = runtime.schema
    leaf_by_entity = {leaf.name: leaf for leaf in registry.leaves}
    for resource in registry.resources:
        for app in child.apps:
            for tool in app.tools:
                if tool.name in resource.removed_tools:
                    out.append(f"{resource.label}: the original read tool {tool.name} is still offered")
                elif app.name != APP and tool.family in READ_FAMILIES:
                    if tool.handler in FILE_READ_HANDLERS and resource.entity == "files":
                        out.append(f"{resource.label}: {tool.name} still reads the workspace files")
                    elif tool.entity and schema.resolve(tool.entity, app.name).name == resource.entity:
                        out.append(f"{resource.label}: {tool.name} still reads {resource.entity}")
    for app in child.apps:
        if app.name != APP:
            continue
        for tool in app.tools:
            if tool.family not in READ_FAMILIES:
                continue
            leaf = leaf_by_entity.get(tool.entity or "")
            if leaf is None:
                out.append(f"{tool.name} reads hidden state {tool.entity}")
            elif fetch_tool(leaf) != tool.name:
                out.append(f"{tool.name} reads view {leaf.name} outside its access path")
    # Gated views must refuse a read that skips their preparation.
    payloads = leaf_payloads(registry, child.world.tables)
    with runtime.session() as session:
        session.reset()
        for leaf in registry.leaves:
            gates = [layer.kind for layer in leaf.layers if layer.kind in ("export", "stage", "index", "keygate", "archive")]
            if not gates:
                continue
            args: dict[str, Any] = {}
            for layer in leaf.layers:
                args.update(
                    {
                        "paginate": {"cursor": "start"},
                        "export": {"job_id": 1},
                        "keygate": {"access_key": "guess"},
                        "archive": {"archive_session": 1},
                    }.get(layer.kind, {})
                )
                for b in getattr(layer, "requires", ()):
                    args[b.arg] = "guess"
            if leaf.mode == "key":
                rows = payloads.get(leaf.id) or [{leaf.key: 1}]
                args[key_arg(leaf)] = rows[0][leaf.key]
            result = session.step({"tool": fetch_tool(leaf), "arguments": args})
            if result.ok:
                out.append(f"{fetch_tool(leaf)} answers without its preparation ({', '.join(gates)})")
        out.extend(_gate_bypass(child, registry, session))
    return out


def _gate_bypass(child: Environment, registry: Registry, session: Session) -> list[str]:
    """Each gated tool, called with its gold arguments in a fresh session where every other gate of
    the tool is open (unless opening it needs this one), must be refused by this gate."""
    out: list[str] = []
    if not registry.gates:
        return out
    nodes = {**{leaf.id: leaf for leaf in registry.leaves}, **{g.id: g for g in registry.gates}}
    tools = {(a.name, t.name): t for a in child.apps for t in a.tools}
    rows = sum(len(v) for k, v in child.world.tables.items() if k.startswith(APP + "."))
    for gate in registry.gates:
        tool = tools.get((gate.app, gate.tool))
        if tool is None:
            continue  # the references check names it
        if gate_guard(gate).model_dump(mode="json") not in [p.model_dump(mode="json") for p in tool.preconditions]:
            out.append(f"{gate.tool} is not held by its gate {gate.id}: the tool has no precondition on it")
        call = gold_call(registry, gate.tool)
        if call is None:
            out.append(f"{gate.tool}: the original reference solution never calls it, so its gate cannot be tested")
            continue
        others = [g for g in registry.gates if g.tool == gate.tool and g.id != gate.id]
        behind = [g for g in others if depends_on(nodes, g.id, gate.id)]  # closed while this one is
        session.reset()
        traversal = Traversal(session, registry, bound=call_bound(registry, rows))
        try:
            for other in others:
                if other not in behind:
                    traversal.open_gate(other)
        except TraversalError as exc:
            out.append(f"{gate.tool}: the bypass test of gate {gate.id} could not open the tool's other gates ({exc.message})")
            continue
        result = session.step({"tool": gate.tool, "arguments": call.arguments})
        if result.ok:
            out.append(f"{gate.tool} answers its gold call without {gate.prep} (gate {gate.id} is open)")
        elif not any(g.prep in (result.message or "") for g in [gate, *behind]):
            out.append(f"{gate.tool} is refused for another reason than its gate {gate.id}: {result.message}")
    return out
