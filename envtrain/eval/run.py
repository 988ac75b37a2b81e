"""Evaluate a policy on a benchmark: every task x attempt through the benchmark's adapter, graded
by the benchmark's own verifier, concurrently, into episode rows and trajectories.

    rows, trajectories = asyncio.run(evaluate(make_adapter("bfcl-multi-turn:base"), policy, EvalConfig(...)))
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field

from envtrain.agent.types import Policy, SamplingParams
from envtrain.bench.types import Adapter, EpisodeLimits, TaskInfo
from envtrain.eval.records import THRESHOLD, EpisodeRow
from envtrain.rollout.trajectory import Trajectory


class EvalConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    benchmark: str  # as make_adapter reads it: "bfcl-multi-turn:base", "reasoning-gym:leg_counting:0-3", "envs:DIR"
    policy: str  # as make_policy reads it, or "oracle" for the benchmark's gold replay
    out: Path
    attempts: int = Field(default=1, ge=1)  # per task; pass@k for k <= attempts
    limit: int | None = Field(default=None, ge=1)  # tasks (per category / per level)
    seed: int = 0  # reasoning-gym's dataset seed
    concurrency: int = Field(default=8, ge=1)  # episodes at once
    threshold: float = Field(default=THRESHOLD, ge=0.0, le=1.0)
    sampling: SamplingParams = SamplingParams(temperature=0.0)  # greedy by default; raise it for pass@k with k > 1
    limits: EpisodeLimits = EpisodeLimits()
    save_trajectories: bool = True  # OUT/trajectories.jsonl: every message, token id and logprob


async def evaluate(
    adapter: Adapter, policy: Policy, cfg: EvalConfig, *, fixture: bool = False,
    on_start: Callable[[int], None] | None = None, on_episode: Callable[[EpisodeRow], None] | None = None,
) -> tuple[list[EpisodeRow], list[Trajectory]]:
    """Rows in task order (attempts in order), and the graded trajectories."""
    tasks = list(await asyncio.to_thread(adapter.tasks))
    jobs = [(i, task, a) for i, task in enumerate(tasks) for a in range(cfg.attempts)]
    if on_start is not None:
        on_start(len(jobs))
    gate = asyncio.Semaphore(cfg.concurrency)
    done: dict[tuple[int, int], tuple[EpisodeRow, Trajectory | None]] = {}

    async def one(i: int, task: TaskInfo, attempt: int) -> None:
        async with gate:
            try:
                episode = await adapter.episode(task, policy, cfg.sampling, cfg.limits, attempt)
                grade = await asyncio.to_thread(adapter.grade, episode)
            except Exception as exc:  # a task that cannot run (a broken document): a failed row, the run goes on
                row = EpisodeRow(task_id=task.id, benchmark=task.benchmark, group=task.group, depth=task.depth, root=task.root,
                                 attempt=attempt, policy=policy.name, fixture=fixture, passed=False, score=0.0,
                                 stop_reason="error", detail={"error": f"{type(exc).__name__}: {exc}"[:500]})
                done[(i, attempt)] = (row, None)
            else:
                t = episode.trajectory.model_copy(update={"passed": grade.passed, "score": grade.score})
                row = EpisodeRow(
                    task_id=task.id, benchmark=task.benchmark, group=task.group, depth=task.depth, root=task.root,
                    attempt=attempt, policy=policy.name, fixture=fixture, passed=grade.passed, score=grade.score,
                    items_passed=grade.items_passed, items_total=grade.items_total, turns=t.num_turns, tool_calls=t.num_tool_calls,
                    tool_errors=t.num_tool_errors, prompt_tokens=t.prompt_tokens, completion_tokens=t.completion_tokens,
                    stop_reason=t.stop_reason, seconds=t.seconds, grade_seconds=grade.seconds, trajectory_id=t.id,
                    detail={**grade.detail, **({"error": t.error} if t.error else {})},
                )
                done[(i, attempt)] = (row, t)
            if on_episode is not None:
                on_episode(row)

    pending = [asyncio.create_task(one(i, task, a)) for i, task, a in jobs]
    try:
        await asyncio.gather(*pending)
    except BaseException:
        for p in pending:
            p.cancel()
        raise
    ordered = [done[(i, a)] for i, _, a in jobs]
    return [row for row, _ in ordered], [t for _, t in ordered if t is not None]
