"""Evaluate a policy on a benchmark: every task x attempt through the benchmark's adapter, graded
by the benchmark's own verifier, concurrently, into episode rows and trajectories.

    rows, trajectories = asyncio.run(evaluate(make_adapter("bfcl-multi-turn:base"), policy, EvalConfig(...)))
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from envtrain.agent.types import Policy, SamplingParams
from envtrain.bench.types import Adapter, EpisodeLimits, TaskInfo
from envtrain.eval.journal import JOURNAL, Journal
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


def settings(cfg: EvalConfig) -> dict[str, Any]:
    """What decides a run's episodes (a journal resumes only a run of the same ones)."""
    return cfg.model_dump(mode="json", exclude={"out", "concurrency", "threshold"})


async def evaluate(
    adapter: Adapter, policy: Policy, cfg: EvalConfig, *, fixture: bool = False, journal: bool = False,
    on_start: Callable[[int], None] | None = None, on_episode: Callable[[EpisodeRow], None] | None = None,
    on_resume: Callable[[int], None] | None = None,
) -> tuple[list[EpisodeRow], list[Trajectory]]:
    """Rows in task order (attempts in order), and the graded trajectories.

    ``journal``: append each finished episode to ``cfg.out/journal.jsonl`` and first take back the
    episodes an interrupted run of the same settings finished there (``on_episode`` sees those
    too, first, after ``on_resume`` with their number); ``write_run`` removes the journal. Raises
    JournalError for another run's journal."""
    tasks = list(await asyncio.to_thread(adapter.tasks))
    jobs = [(i, task, a) for i, task in enumerate(tasks) for a in range(cfg.attempts)]
    if on_start is not None:
        on_start(len(jobs))
    log = Journal(cfg.out / JOURNAL, settings(cfg)) if journal else None
    resumed = log.resume() if log is not None else {}
    done: dict[tuple[int, int], tuple[EpisodeRow, Trajectory | None]] = {
        (i, a): resumed[(i, task.id, a)] for i, task, a in jobs if (i, task.id, a) in resumed
    }
    if done and on_resume is not None:
        on_resume(len(done))
    for row, _ in done.values():
        if on_episode is not None:
            on_episode(row)
    gate = asyncio.Semaphore(cfg.concurrency)

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
            if log is not None:
                log.add((i, task.id, attempt), row, done[(i, attempt)][1] if cfg.save_trajectories else None)
            if on_episode is not None:
                on_episode(row)

    pending = [asyncio.create_task(one(i, task, a)) for i, task, a in jobs if (i, a) not in done]
    try:
        await asyncio.gather(*pending)
    except BaseException:
        for p in pending:
            p.cancel()
        raise
    finally:
        if log is not None:
            log.close()
    ordered = [done[(i, a)] for i, _, a in jobs]
    return [row for row, _ in ordered], [t for _, t in ordered if t is not None]
