"""Recursive environment scaling (RES §3.4): accepted children become parents, up to a depth cap.

Each lineage lives in ``OUT/lineages/<root id>/``: ``0.json`` is the root, ``<d>.json`` the
accepted child at depth d, with ``<d>.plan.json`` (its plan) and ``<d>.validation.json`` (its
validation record, the repair attempts that preceded it and their costs) beside it, and
``status.json`` saying how far the lineage got and why it stopped; a node evaluated by a target
policy has ``<d>.eval.json`` beside it (``envtrain.scale.evaluate``). A rerun resumes: the chain
on disk is checked link by link (ids, parents, plans, validation records) and continued from the
last good node; a broken link is reported with the check it fails and the files from it on are
rebuilt.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envtrain.agent.types import Policy
from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.core.io import atomic_write_text, content_hash
from envtrain.scale.apply import apply_plan
from envtrain.scale.evaluate import STOP_FAILURES, NodeEvaluator, close_policy, selected
from envtrain.scale.operators import library as operator_library
from envtrain.scale.operators.base import PlanError
from envtrain.scale.plan import Plan
from envtrain.scale.propose import Attempt, NoProposal, ProgrammaticProposer, ProposalError
from envtrain.scale.validate import Validation, validate

Ablation = Literal["none", "no-deps", "no-inheritance", "basic"]


class ScaleConfig(BaseModel):
    """Settings of one scaling run; a resumed run must use the same ones."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    depth: int = Field(10, ge=1, le=50, description="depth cap: accepted children per lineage")
    proposer: Literal["programmatic", "llm"] = Field("programmatic", description="who proposes plans")
    seed: int = Field(0, description="seeds the programmatic search")
    ablation: Ablation = Field(
        "none",
        description="no-deps: prerequisites released; no-inheritance: every node enhances "
        "the root independently; basic: the six Basic operators only",
    )
    budget: int = Field(8, ge=1, description="outer proposer executions per parent (proposals, repairs, retries)")
    max_steps: int = Field(4, ge=1, le=8, description="operators per plan")
    lookahead: int = Field(4, ge=1, description="programmatic: plans built per proposal; the hardest valid one is proposed")
    admission_budget: int = Field(400, ge=1, description="tool calls the admission condition (4) search may try")
    llm_url: str | None = Field(None, description="llm proposer: an OpenAI-compatible base URL (…/v1)")
    llm_model: str | None = Field(None, description="llm proposer: the model name to request")
    evaluate_policy: str | None = Field(
        None, description="target evaluation: a policy spec (oracle, noop, hf:PATH, openai:URL); none: no evaluation"
    )
    evaluate_at: tuple[int, ...] = Field((), description="target evaluation: the depths evaluated (0 is the root)")
    evaluate_every: int | None = Field(None, ge=1, description="target evaluation: also every K-th depth (K, 2K, ...)")
    evaluate_attempts: int = Field(3, ge=STOP_FAILURES, description="target evaluation: attempts per evaluated node")
    evaluate_max_turns: int = Field(60, ge=1, description="target evaluation: assistant turns per attempt (RES Table A1)")

    @model_validator(mode="after")
    def _evaluation(self) -> "ScaleConfig":
        chosen = bool(self.evaluate_at) or self.evaluate_every is not None
        if chosen and not self.evaluate_policy:
            raise ValueError("evaluate_at / evaluate_every need evaluate_policy (the policy that evaluates the nodes)")
        if self.evaluate_policy and not chosen:
            raise ValueError("evaluate_policy needs the depths to evaluate: evaluate_at or evaluate_every")
        if any(d < 0 or d > self.depth for d in self.evaluate_at):
            raise ValueError(f"evaluate_at: depths are 0..{self.depth}")
        return self

    @property
    def library(self) -> str:
        return "basic" if self.ablation == "basic" else "full"

    def evaluated(self, depth: int) -> bool:
        return self.evaluate_policy is not None and selected(depth, self.evaluate_at, self.evaluate_every)


@dataclass
class Extension:
    """The outcome of the repair loop for one parent."""

    child: Environment | None
    plan: Plan | None
    validation: Validation | None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    proposer_cost: dict[str, float] = field(default_factory=dict)
    reason: str = ""


def make_proposer(config: ScaleConfig, seed_offset: int = 0):
    if config.proposer == "llm":
        from envtrain.scale.llm import LLMProposer

        if not config.llm_url:
            raise ValueError("the llm proposer needs --llm-url (an OpenAI-compatible endpoint)")
        return LLMProposer(
            url=config.llm_url, model=config.llm_model or "default", library=config.library, release=config.ablation == "no-deps"
        )
    return ProgrammaticProposer(
        seed=config.seed + seed_offset,
        library=config.library,
        max_steps=config.max_steps,
        release=config.ablation == "no-deps",
        lookahead=config.lookahead,
    )


def extend(parent: Environment, proposer, config: ScaleConfig) -> Extension:
    """Propose, apply, validate; on rejection the diagnostics go back to the proposer, up to the
    budget of outer executions. The parent is never changed: a discarded candidate leaves it."""
    start = time.perf_counter()
    operators = operator_library(config.library)
    history: list[Attempt] = []
    records: list[dict[str, Any]] = []
    for _ in range(config.budget):
        t = time.perf_counter()
        try:
            plan, child = proposer.propose(parent, history)
        except NoProposal as exc:
            return Extension(None, None, None, records, time.perf_counter() - start, _cost(proposer), f"no proposal: {exc}")
        except ProposalError as exc:  # an answer that is not a plan: diagnostics back to the proposer
            history.append(Attempt(None, False, ("plan",), (f"plan: {exc}",)))
            records.append(
                {
                    "plan": None,
                    "accepted": False,
                    "failed": ["plan"],
                    "diagnostics": [f"plan: {exc}"],
                    "seconds": round(time.perf_counter() - t, 4),
                }
            )
            continue
        try:
            if child is None:
                child = apply_plan(parent, plan, operators=operators)
        except PlanError as exc:
            history.append(Attempt(plan, False, ("plan",), (f"plan: {exc}",)))
            records.append(
                {
                    "plan": plan.hash,
                    "accepted": False,
                    "failed": ["plan"],
                    "diagnostics": [f"plan: {exc}"],
                    "seconds": round(time.perf_counter() - t, 4),
                }
            )
            continue
        result = validate(parent, child, plan, operators=operators, admission_budget=config.admission_budget)
        records.append(
            {
                "plan": plan.hash,
                "accepted": result.accepted,
                "failed": list(result.failed),
                "diagnostics": result.diagnostics()[:20],
                "steps": [s.operator for s in plan.steps],
                "seconds": round(time.perf_counter() - t, 4),
            }
        )
        if result.accepted:
            return Extension(child, plan, result, records, time.perf_counter() - start, _cost(proposer))
        history.append(Attempt(plan, False, result.failed, tuple(result.diagnostics())))
    return Extension(
        None,
        None,
        None,
        records,
        time.perf_counter() - start,
        _cost(proposer),
        f"no valid child within {config.budget} outer executions",
    )


def _cost(proposer) -> dict[str, float]:
    take = getattr(proposer, "take_cost", None)
    return take() if take else {}


# --- lineages on disk ------------------------------------------------------------------------


def lineage_dir(out: Path, root: Environment) -> Path:
    return out / "lineages" / root.id


def load_chain(folder: Path, root: Environment, *, independent: bool) -> tuple[list[Environment], list[str]]:
    """The good prefix of a lineage on disk, and a warning per broken link (naming its check)."""
    nodes = [root]
    warnings: list[str] = []
    depth = 1
    while (folder / f"{depth}.json").exists():
        why = _link(folder, depth, root if independent else nodes[-1])
        if isinstance(why, str):
            warnings.append(f"depth {depth}: {why}; rebuilding from depth {depth}")
            for d in range(depth, 10_000):
                paths = [folder / f"{d}{s}" for s in (".json", ".plan.json", ".validation.json", ".eval.json")]
                if not any(p.exists() for p in paths):
                    break
                for p in paths:
                    p.unlink(missing_ok=True)
            break
        nodes.append(why)
        depth += 1
    return nodes, warnings


def _link(folder: Path, depth: int, parent: Environment) -> Environment | str:
    try:
        child = Environment.load(folder / f"{depth}.json")
    except SpecError as exc:
        return f"lineage: {depth}.json is not the environment it claims to be ({str(exc)[:160]})"
    try:
        plan = Plan.load(folder / f"{depth}.plan.json")
        record = json.loads((folder / f"{depth}.validation.json").read_text(encoding="utf-8"))
        validation = Validation.model_validate(record["validation"])
    except (PlanError, OSError, ValueError, KeyError) as exc:
        return f"lineage: the plan or validation record of depth {depth} is missing or corrupt ({str(exc)[:160]})"
    if child.provenance.parent != parent.id or plan.parent != parent.id:
        return f"lineage: {depth}.json does not descend from the node before it"
    if validation.child != child.id or validation.plan != plan.hash or not validation.accepted:
        return f"lineage: the validation record of depth {depth} is not an acceptance of this child and plan"
    return child


def run_lineage(
    root_path: Path,
    out: Path,
    config: ScaleConfig,
    on_node: Callable[[int], None] | None = None,
    policy: Policy | None = None,
) -> dict[str, Any]:
    """Scale one root to the depth cap (or until no valid child is found, or target evaluation
    stops it); resumable. ``policy``: the evaluating policy (default: built from the config)."""
    root = Environment.load(root_path)
    folder = lineage_dir(out, root)
    folder.mkdir(parents=True, exist_ok=True)
    status_path = folder / "status.json"
    independent = config.ablation == "no-inheritance"
    if not (folder / "0.json").exists():
        root.save(folder / "0.json")
    nodes, warnings = load_chain(folder, root, independent=independent)
    status = _read(status_path)
    if status.get("state") == "stopped" and status.get("depth") == len(nodes) - 1 and not warnings:
        return status  # a lineage that ran out of valid children stays stopped on resume
    for node in nodes[1:]:
        if on_node:
            on_node(node.provenance.depth)
    state, reason = "done", ""
    evaluator = NodeEvaluator(folder, config, policy)
    try:
        for node_depth, node in enumerate(nodes):
            reason = evaluator.stops(node_depth, node)
            if reason:
                state, nodes = "stopped", nodes[: node_depth + 1]
                break
        if state == "done":
            state, reason = _grow(folder, config, root, nodes, evaluator, on_node, independent)
    finally:
        evaluator.close()
    lengths = [len(n.reference_solution) for n in nodes]
    status = {
        "root": root.id,
        "source": str(root_path),
        "depth": len(nodes) - 1,
        "state": state,
        "reason": reason,
        "reference_lengths": lengths,
        "warnings": warnings,
        "independent": independent,
    }
    _write_json(status_path, status)
    return status


def _grow(
    folder: Path,
    config: ScaleConfig,
    root: Environment,
    nodes: list[Environment],
    evaluator: NodeEvaluator,
    on_node: Callable[[int], None] | None,
    independent: bool,
) -> tuple[str, str]:
    """Extend ``nodes`` (in place) to the depth cap; returns the lineage's state and why."""
    for depth in range(len(nodes), config.depth + 1):
        parent = root if independent else nodes[-1]
        proposer = make_proposer(config, seed_offset=depth if independent else 0)
        ext = extend(parent, proposer, config)
        if ext.child is None:
            _write_failed(folder, depth, ext)
            return "stopped", ext.reason
        assert ext.plan is not None and ext.validation is not None
        ext.plan.save(folder / f"{depth}.plan.json")
        _write_json(
            folder / f"{depth}.validation.json",
            {
                "validation": ext.validation.model_dump(mode="json"),
                "attempts": ext.attempts,
                "seconds": round(ext.seconds, 4),
                "proposer": ext.proposer_cost,
                "reference_length": len(ext.child.reference_solution),
            },
        )
        ext.child.save(folder / f"{depth}.json")  # written last: its presence marks the node complete
        nodes.append(ext.child)
        if on_node:
            on_node(depth)
        reason = evaluator.stops(depth, ext.child)
        if reason:
            return "stopped", reason
    return "done", ""


def _write_failed(folder: Path, depth: int, ext: Extension) -> None:
    _write_json(
        folder / f"{depth}.rejected.json",
        {"attempts": ext.attempts, "seconds": round(ext.seconds, 4), "proposer": ext.proposer_cost, "reason": ext.reason},
    )


def _write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def check_config(out: Path, config: ScaleConfig) -> None:
    """An output folder belongs to one configuration: resuming with other settings is refused."""
    path = out / "config.json"
    data = config.model_dump(mode="json")
    if path.exists():
        # A setting added since the run was written counts as at its default.
        defaults = ScaleConfig.model_construct().model_dump(mode="json")
        old = _read(path)
        old = {**defaults, **old} if old else old
        if old and old != data:
            changed = sorted(k for k in set(old) | set(data) if old.get(k) != data.get(k))
            raise ValueError(
                f"{out} holds a run with other settings ({', '.join(changed)}); use another --out or the same settings"
            )
    out.mkdir(parents=True, exist_ok=True)
    _write_json(path, data)


def config_hash(config: ScaleConfig) -> str:
    return content_hash(config.model_dump(mode="json"))


# --- many lineages ---------------------------------------------------------------------------


def scale_all(
    paths: list[Path],
    out: Path,
    config: ScaleConfig,
    *,
    workers: int = 1,
    on_node: Callable[[str, int], None] | None = None,
    on_lineage: Callable[[dict[str, Any]], None] | None = None,
    policy: Policy | None = None,
) -> dict[str, Any]:
    """Scale every root (one lineage each); returns the report. Rerunning resumes.

    ``policy``: the target-evaluation policy object (default: built once from the config's spec;
    with several workers, each lineage builds its own)."""
    from envtrain.scale.report import build_report

    if policy is not None and workers > 1:
        raise ValueError("a policy object cannot be shared by worker processes: use workers=1 or the config's policy spec")
    check_config(out, config)
    start = time.perf_counter()
    if workers <= 1:
        owned = policy is None and config.evaluate_policy is not None
        if owned:
            from envtrain.agent.registry import make_policy

            policy = make_policy(config.evaluate_policy or "")
        try:
            for path in paths:
                status = _run_one(path, out, config, (lambda d, p=path: on_node(str(p), d)) if on_node else None, policy)
                if on_lineage:
                    on_lineage(status)
        finally:
            if owned and policy is not None:
                close_policy(policy)
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_run_one, path, out, config, None) for path in paths]
            for future in as_completed(futures):
                status = future.result()
                if on_lineage:
                    on_lineage(status)
    report = build_report(out, config.depth, wall_seconds=time.perf_counter() - start)
    report["not_loaded"] = _not_loaded(out)
    _write_json(out / "report.json", report)
    return report


def _run_one(path: Path, out: Path, config: ScaleConfig, on_node, policy: Policy | None = None) -> dict[str, Any]:
    try:
        return run_lineage(path, out, config, on_node, policy)
    except SpecError as exc:  # a root that is not an environment: recorded, the others go on
        record = {"source": str(path), "error": str(exc)}
        failed = _read(out / "not_loaded.json")
        failed[str(path)] = str(exc)
        _write_json(out / "not_loaded.json", failed)
        return record


def _not_loaded(out: Path) -> dict[str, str]:
    return _read(out / "not_loaded.json")


# --- the "w/o dependencies" ablation on saved lineages (RES App. D.1) ------------------------


def release_saved(folder: Path) -> list[tuple[Environment, Plan | None]]:
    """A saved lineage rebuilt with its cross-operator prerequisites released: every plan replayed
    from the root with token bindings dropped and key directories replaced by keys in the docs.
    Task, facts and the atomic transformation history stay; steps aimed at a released structure (a
    directory that no longer exists) are dropped. Returns (environment, released plan) per depth;
    the plan is None where nothing was left to apply (the node equals its parent)."""
    from envtrain.scale.apply import apply_step, start_work

    operators = operator_library("full")
    root = Environment.load(folder / "0.json")
    nodes: list[tuple[Environment, Plan | None]] = [(root, None)]
    depth = 1
    while (folder / f"{depth}.plan.json").exists():
        saved = Plan.load(folder / f"{depth}.plan.json")
        parent = nodes[-1][0]
        work = start_work(parent, release=True)
        kept = []
        for step in saved.steps:
            trial = work.fork()
            try:
                apply_step(trial, step, operators)
            except PlanError as exc:
                if "unknown target" in str(exc):
                    continue  # it transformed a structure the release removed
                raise
            work = trial
            kept.append(step.model_copy(update={"binds": ()}))
        if not kept:
            nodes.append((parent, None))
        else:
            plan = Plan(parent=parent.id, steps=tuple(kept), release_dependencies=True, proposer=saved.proposer, note="released")
            nodes.append((apply_plan(parent, plan, operators=operators), plan))
        depth += 1
    return nodes
