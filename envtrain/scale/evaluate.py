"""Target evaluation at selected nodes of a lineage (RES §3.4, App. A, Table A1).

At an evaluated node a policy makes a few attempts (three in RES) with the one rollout engine
(``envtrain.rollout.episode``). Each attempt is a pass, an assessed failure, or a measurement
error (the episode ended with stop reason ``error``: the policy could not be reached or answered
garbage, so the attempt says nothing about the environment). Three assessed failures with no
pass and no measurement error stop the lineage: no further descendants. Acceptance never looks at
these outcomes; they only decide stopping.

The record of a node is ``<depth>.eval.json`` beside the node; a resumed run reads it back rather
than evaluating again.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envtrain.agent.types import Policy, SamplingParams
from envtrain.core.env import Environment
from envtrain.core.io import atomic_write_text
from envtrain.core.session import Runtime
from envtrain.rollout.episode import RolloutLimits, run_episode

if TYPE_CHECKING:
    from envtrain.scale.lineage import ScaleConfig

STOP_FAILURES = 3  # assessed failures at one node that stop the lineage (RES §3.4)
MEASUREMENT_ERROR = "error"  # the stop reason of an attempt that measured nothing
STOPPED = "target evaluation"  # how a lineage's stop reason starts when evaluation stopped it


def eval_path(folder: Path, depth: int) -> Path:
    return folder / f"{depth}.eval.json"


def selected(depth: int, at: tuple[int, ...], every: int | None) -> bool:
    """Whether ``depth`` is evaluated: named in ``at``, or a positive multiple of ``every``."""
    return depth in at or (every is not None and depth > 0 and depth % every == 0)


def verdict(attempts: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of one node's attempts and whether they stop the lineage."""
    passes = sum(1 for a in attempts if a["passed"])
    errors = sum(1 for a in attempts if not a["passed"] and a["stop_reason"] == MEASUREMENT_ERROR)
    failures = len(attempts) - passes - errors
    return {
        "passes": passes,
        "assessed_failures": failures,
        "measurement_errors": errors,
        "stop": passes == 0 and errors == 0 and failures >= STOP_FAILURES,
    }


async def _attempts(env: Environment, policy: Policy, attempts: int, limits: RolloutLimits) -> list[dict[str, Any]]:
    runtime = Runtime(env)
    out = []
    for attempt in range(attempts):  # sequential, as RES runs a seed's three attempts
        traj = await run_episode(runtime, policy, SamplingParams(), limits, attempt=attempt)
        out.append(
            {
                "attempt": attempt,
                "passed": traj.passed,
                "score": traj.score,
                "stop_reason": traj.stop_reason,
                "error": traj.error[:500],
                "turns": traj.num_turns,
                "tool_calls": traj.num_tool_calls,
                "tokens": traj.prompt_tokens + traj.completion_tokens,
                "seconds": round(traj.seconds, 4),
                "trajectory": traj.id,
            }
        )
    return out


def evaluate_node(folder: Path, depth: int, env: Environment, policy: Policy, *, attempts: int, max_turns: int) -> dict[str, Any]:
    """The evaluation record of the node at ``depth`` (read back when it exists for this very
    environment and policy, else run and written)."""
    path = eval_path(folder, depth)
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("env") == env.id and old.get("policy") == policy.name and len(old.get("attempts", ())) == attempts:
            return old
    except (OSError, ValueError):
        pass
    rows = asyncio.run(_attempts(env, policy, attempts, RolloutLimits(max_turns=max_turns)))
    record = {"depth": depth, "env": env.id, "policy": policy.name, "max_turns": max_turns, "attempts": rows, **verdict(rows)}
    atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return record


def close_policy(policy: Policy) -> None:
    asyncio.run(policy.aclose())


class NodeEvaluator:
    """Target evaluation of one lineage's selected nodes; the policy is built on first use
    (from the config's spec) unless one is given, and closed by whoever built it."""

    def __init__(self, folder: Path, config: ScaleConfig, policy: Policy | None = None) -> None:
        self.folder, self.config, self.policy, self.owned = folder, config, policy, False

    def stops(self, depth: int, node: Environment) -> str:
        """Why the lineage stops after the node at ``depth`` ('' when it goes on)."""
        if not self.config.evaluated(depth):
            return ""
        if self.policy is None:
            from envtrain.agent.registry import make_policy

            self.policy, self.owned = make_policy(self.config.evaluate_policy or ""), True
        record = evaluate_node(
            self.folder,
            depth,
            node,
            self.policy,
            attempts=self.config.evaluate_attempts,
            max_turns=self.config.evaluate_max_turns,
        )
        if not record["stop"]:
            return ""
        return f"{STOPPED}: {record['assessed_failures']} assessed failures of {self.policy.name} at depth {depth}"

    def close(self) -> None:
        if self.owned and self.policy is not None:
            close_policy(self.policy)
