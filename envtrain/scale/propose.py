"""The programmatic proposer: a seeded search over applicable (operator, view) pairs.

It enumerates every operator of the library against every view of the parent and every
untouched resource, weighs each pair, and samples a plan of one to ``max_steps`` steps, trying
each step on a scratch copy so that a proposal always applies. The weights encode RES's two
levers: build on inherited structure (views made in the last round, resources the task reads)
and compose dependencies (bind a preparation to a token another view already publishes,
preferring older, inherited ones). Pairs that failed validation for this parent are not proposed
again (the repair loop's diagnostics).

envtrain's gating operators (beyond RES's 17) are proposed for a step only where no record
operator applies to any view or resource: environments whose tools reveal no movable records
(BFCL's) are scaled by gating their tools, while every other environment draws exactly the plans
it drew before gating existed. A plan may still name gating operators for any environment.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Mapping

from envtrain.core.env import Environment
from envtrain.core.io import content_hash
from envtrain.scale.apply import apply_plan, apply_step, start_work
from envtrain.scale.operators import Operator
from envtrain.scale.operators import library as operator_library
from envtrain.scale.operators.base import PlanError, Work
from envtrain.scale.plan import Plan, PlanStep

SPLITTING = {
    "sharding",
    "source routing",
    "archive views",
    "candidate intersection",
    "summary-to-detail access",
    "evidence dispersion",
}


class NoProposal(Exception):
    """Nothing applicable is left to propose for this parent."""


class ProposalError(Exception):
    """A proposer's answer that is not a plan (an LLM's malformed JSON): one failed outer execution."""


@dataclass(frozen=True)
class Attempt:
    """One outer execution of the repair loop: the plan and, if rejected, why."""

    plan: Plan | None  # None: the proposer's answer was not a plan
    accepted: bool
    failed: tuple[str, ...] = ()
    diagnostics: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProgrammaticProposer:
    seed: int = 0
    library: str = "full"
    max_steps: int = 4
    release: bool = False  # the "w/o dependencies" ablation: plans apply with prerequisites released
    max_views: int = 40  # beyond this many views a lineage only layers and encodes, it no longer splits
    max_rows: int = 20_000
    lookahead: int = 4  # plans built per proposal; the hardest valid one is proposed
    name: str = field(default="programmatic", init=False)

    def operators(self) -> Mapping[str, Operator]:
        return operator_library(self.library)

    def propose(self, parent: Environment, history: list[Attempt]) -> tuple[Plan, Environment | None]:
        """A plan for ``parent``, and the candidate it builds (to spare the caller a second Apply).

        ``lookahead`` sampled plans are built and the one whose reference solution (restoration
        plus original calls) is longest wins: the search favours harder children among valid ones.
        """
        best: tuple[int, Plan, Environment | None] | None = None
        operators = self.operators()
        cache: dict[str, Any] = {}
        for k in range(self.lookahead):
            try:
                plan = self._plan(parent, history, k, cache)
            except NoProposal:
                if best is None and k == self.lookahead - 1:
                    raise
                continue
            try:
                child = apply_plan(parent, plan, operators=operators, cache=cache)
            except PlanError:
                continue
            score = len(child.reference_solution)
            if best is None or score > best[0]:
                best = (score, plan, child)
        if best is None:
            return self._plan(parent, history, 0, cache), None
        return best[1], best[2]

    def _plan(self, parent: Environment, history: list[Attempt], k: int, cache: dict[str, Any]) -> Plan:
        rng = random.Random(content_hash([self.seed, parent.id, len(history), k]))
        operators = self.operators()
        banned = {(s.operator, s.target) for a in history if not a.accepted and a.plan for s in a.plan.steps}
        work = start_work(parent, release=self.release, cache=cache)
        steps: list[PlanStep] = []
        want = rng.randint(1, self.max_steps)
        last_made: set[str] = set()
        for _ in range(want):
            step = self._step(work, operators, rng, banned, last_made)
            if step is None:
                break
            before = set(work.leaves)
            steps.append(step)
            last_made = set(work.leaves) - before or {step.target}
        if not steps:
            gateable = any(op.acts_on == "tool" for op in operators.values()) and any(
                t.gold and not t.records for t in work.tools.values()
            )
            if not work.leaves and not work.originals() and not gateable:
                raise NoProposal(
                    f"nothing in {parent.id} can be transformed: no original resource is read by a declarative "
                    "read, list or search tool or by the workspace's file tools, and the library has no gating "
                    "operator for the reference solution's tools"
                )
            raise NoProposal(f"no operator applies to any view or tool of {parent.id} (tried {len(banned)} rejected pairs)")
        return Plan(parent=parent.id, steps=tuple(steps), release_dependencies=self.release, proposer=self.name)

    def _step(
        self, work: Work, operators: Mapping[str, Operator], rng: random.Random, banned: set, fresh: set[str]
    ) -> PlanStep | None:
        candidates = self._candidates(work, operators, banned, fresh)
        while candidates:
            weights = [w for w, _, _ in candidates]
            i = rng.choices(range(len(candidates)), weights=weights)[0]
            _, op, target = candidates.pop(i)
            probe, trial = work.fork(), work.fork()
            try:
                # an untouched resource is materialised on the probe only
                leaf = probe.tool_target(target) if op.acts_on == "tool" else probe.target(target)
                params = op.sample(probe, leaf, rng)
                binds = self._binds(probe, op, leaf, rng)
                step = PlanStep(operator=op.name, target=target, params=params, binds=tuple(binds))
                apply_step(trial, step, operators)
            except PlanError:
                continue
            _adopt(work, trial)
            return step
        return None

    def _candidates(
        self, work: Work, operators: Mapping[str, Operator], banned: set, fresh: set[str]
    ) -> list[tuple[float, Operator, str]]:
        out: list[tuple[float, Operator, str]] = []
        rows = sum(len(v) for v in work.payloads.values())
        crowded = len(work.leaves) >= self.max_views or rows >= self.max_rows
        targets: list[tuple[str, Any, bool]] = []  # (target, leaf on a scratch copy, needed)
        for leaf in work.leaves.values():
            targets.append((leaf.id, leaf, work.resources[leaf.resource].needed))
        for key, original in sorted(work.originals().items()):
            if key not in work.resources:
                scratch = work.fork()
                targets.append((key, (scratch, scratch.materialize(original)), original.needed))
        for target, leaf, needed in targets:
            scratch = work
            if isinstance(leaf, tuple):
                scratch, leaf = leaf
            for op in operators.values():
                if op.acts_on != "view" or (op.name, target) in banned or (crowded and op.name in SPLITTING):
                    continue
                if op.applies(scratch, leaf) is not None:
                    continue
                weight = 4.0 if needed else 0.4
                if target in fresh or leaf.depth == work.depth - 1:
                    weight *= 3.0  # build on what the last step or round made
                if target in work.leaves and leaf.depth < work.depth - 1:
                    weight *= 1.5  # inherited structure from earlier rounds
                if op.max_binds and work.token_sources(leaf):
                    weight *= 2.0  # compose dependencies when there is something to bind
                if op.name in SPLITTING:
                    weight *= 0.7 if len(work.leaves) > self.max_views // 2 else 1.0
                weight *= _yield(op.name, leaf, len(scratch.payloads[leaf.id]))
                out.append((weight, op, target))
        if not out:
            out = self._gate_candidates(work, operators, banned, fresh)
        return out

    def _gate_candidates(
        self, work: Work, operators: Mapping[str, Operator], banned: set, fresh: set[str]
    ) -> list[tuple[float, Operator, str]]:
        """Gating operators on the original tools the reference solution calls (see the module doc)."""
        out: list[tuple[float, Operator, str]] = []
        inherited = {g.tool for g in work.gates.values()}
        bindable = bool(work.token_sources(None))
        for name, target in sorted(work.tools.items()):
            for op in operators.values():
                if op.acts_on != "tool" or (op.name, name) in banned or op.applies(work, target) is not None:
                    continue
                weight = 4.0
                if name in inherited:
                    weight *= 1.5  # stack gates on tools gated in earlier rounds
                if name in fresh:
                    weight *= 0.5  # spread the gates of one plan over several tools
                if bindable:
                    weight *= 2.0  # compose: bind the new gate to a token already published
                if op.name == "staged tool activation":
                    weight *= 1.5
                out.append((weight, op, name))
        return out

    def _binds(self, work: Work, op: Operator, leaf: Any, rng: random.Random) -> list[str]:
        if not op.max_binds or self.release:
            return []
        sources = work.token_sources(None if op.acts_on == "tool" else leaf)
        if not sources:
            return []
        # Older sources first: composing with inherited structure lengthens the inherited path.
        sources.sort(key=lambda s: (work.nodes()[s.split(":")[0]].depth, s))
        if op.name == "multi-source exports":
            if len(sources) < 2:
                return []
            first = rng.choice(sources[: max(2, len(sources) // 2)])
            second = rng.choice([s for s in sources if s != first])
            return [first, second]
        if rng.random() < 0.75:
            return [rng.choice(sources[: max(1, len(sources) // 2 + 1)])]
        return []


def _yield(name: str, leaf: Any, rows: int) -> float:
    """How much an operator tends to lengthen the restoration of a view of ``rows`` rows: the ones
    whose cost grows with the rows (pages, per-record reads and keys, stages) come first."""
    if name in ("pagination", "summary-to-detail access", "staged release") and rows >= 3:
        return 2.0
    if name == "dependent lookups" and leaf.mode == "key":
        return 2.5
    if name == "field references":
        return 1.5
    return 1.0


def _adopt(work: Work, trial: Work) -> None:
    """Carry a successful trial's state into ``work`` (the plan continues from it)."""
    work.payloads, work.counter, work.seq = trial.payloads, trial.counter, trial.seq
    work.resources, work.leaves, work.removed = trial.resources, trial.leaves, trial.removed
    work.gates = trial.gates
