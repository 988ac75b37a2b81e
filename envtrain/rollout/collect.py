"""Collect trajectories: N attempts per environment, verifier-filtered, written resumably.

    summary = asyncio.run(collect(CollectConfig(envs="examples", out="runs/c1", attempts=4), policy))

Environments run concurrently (``concurrency`` episodes at once); completed episodes are
flushed in shards of ``shard_size``. ``shard=(i, n)`` keeps the environments whose id falls in
shard i of n, a deterministic split for Slurm arrays or several nodes.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from envtrain.agent.types import Policy, SamplingParams
from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.core.io import atomic_write_text
from envtrain.core.session import Runtime
from envtrain.rollout.episode import RolloutLimits, run_episode
from envtrain.rollout.store import TrajectoryStore
from envtrain.rollout.trajectory import Trajectory

ENV_SUFFIXES = (".json", ".yaml", ".yml")


class CollectConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    envs: Path  # a folder of environment documents (searched recursively) or one file
    out: Path
    attempts: int = Field(default=1, ge=1)  # episodes per environment
    keep_per_env: int = Field(default=3, ge=1)  # at most this many kept trajectories per environment
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)  # keep a failed episode whose native score reaches this
    shard: tuple[int, int] = (0, 1)  # (i, n): this run's part of the environments
    concurrency: int = Field(default=8, ge=1)
    shard_size: int = Field(default=256, ge=1)  # episodes per written shard
    sampling: SamplingParams = SamplingParams()
    limits: RolloutLimits = RolloutLimits()


class Summary(BaseModel):
    environments: int
    attempts: int
    kept: int
    pass_at_1: float  # mean over environments of the share of passing attempts
    pass_at_n: float  # share of environments with at least one passing attempt
    mean_score: float
    mean_turns: float
    mean_tool_calls: float
    prompt_tokens: int
    completion_tokens: int
    stop_reasons: dict[str, int]
    env_ms_per_turn_p50: float  # environment-side time per turn (everything but generation)
    generate_ms_per_turn_p50: float
    failed_environments: dict[str, str] = Field(default_factory=dict)  # file -> why it did not load


def env_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise SpecError(f"{root}: no such file or folder")
    return sorted(p for p in root.rglob("*") if p.suffix in ENV_SUFFIXES and p.is_file() and not p.name.startswith("."))


def in_shard(env_id: str, shard: tuple[int, int]) -> bool:
    index, count = shard
    return int(env_id, 16) % count == index


def keep_rows(keep_per_env: int, min_score: float | None) -> Callable[[list[dict[str, Any]]], list[int]]:
    """Verifier-accepted rows (or score >= min_score), at most k per environment, lowest attempts first."""
    def keep(rows: list[dict[str, Any]]) -> list[int]:
        by_env: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, row in enumerate(rows):
            ok = row["passed"] or (min_score is not None and row["score"] >= min_score)
            if ok:
                by_env[row["env_id"]].append((row["attempt"], i))
        return [i for picks in by_env.values() for _, i in sorted(picks)[:keep_per_env]]
    return keep


async def collect(
    cfg: CollectConfig, policy: Policy, *, on_episode: Callable[[Trajectory], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> Summary:
    """Run (or resume) a collection; returns its summary, also written to OUT/summary.json."""
    store = TrajectoryStore(cfg.out)
    store.clean()
    done = store.done()
    failed: dict[str, str] = {}
    envs: list[Environment] = []
    paths: dict[str, str] = {}  # env id -> the file it came from, for error reports
    for path in env_files(cfg.envs):
        try:
            env = Environment.load(path)
        except SpecError as exc:
            failed[str(path)] = str(exc)
            continue
        if in_shard(env.id, cfg.shard) and env.id not in paths:
            envs.append(env)
            paths[env.id] = str(path)
    jobs = [(env, a) for env in envs for a in range(cfg.attempts) if (env.id, a) not in done]
    if on_start is not None:
        on_start(len(jobs))
    buffer: list[Trajectory] = []
    runtimes: dict[str, Runtime] = {}
    left = Counter(env.id for env, _ in jobs)
    gate = asyncio.Semaphore(cfg.concurrency)

    async def one(env: Environment, attempt: int) -> None:
        async with gate:
            if paths[env.id] in failed:
                return
            if env.id not in runtimes:
                try:
                    runtimes[env.id] = await asyncio.to_thread(Runtime, env)
                except SpecError as exc:  # a document that loads but cannot run
                    failed[paths[env.id]] = str(exc)
                    return
            traj = await run_episode(runtimes[env.id], policy, cfg.sampling, cfg.limits, attempt=attempt)
            left[env.id] -= 1
            if left[env.id] == 0:
                runtimes.pop(env.id, None)  # compiled worlds are released once their attempts are done
            buffer.append(traj)
            if on_episode is not None:
                on_episode(traj)
            if len(buffer) >= cfg.shard_size:
                batch = buffer[:]
                buffer.clear()
                await asyncio.to_thread(store.write, batch)

    tasks = [asyncio.create_task(one(env, a)) for env, a in jobs]
    try:
        for task in asyncio.as_completed(tasks):
            await task
    except BaseException:
        for task in tasks:
            task.cancel()
        if buffer:  # keep what finished before the failure
            try:
                await asyncio.to_thread(store.write, buffer[:])
            except Exception:
                pass
        raise
    if buffer:
        await asyncio.to_thread(store.write, buffer[:])
    await asyncio.to_thread(store.finalize, keep_rows(cfg.keep_per_env, cfg.min_score))
    summary = summarize(store, failed)
    atomic_write_text(cfg.out / "summary.json", summary.model_dump_json(indent=1) + "\n")
    return summary


def summarize(store: TrajectoryStore, failed: dict[str, str]) -> Summary:
    data = store.all()
    records = [Trajectory.model_validate_json(r) for r in data["record"]] if data is not None else []
    kept = _count_rows(store.out)
    by_env: dict[str, list[Trajectory]] = defaultdict(list)
    for t in records:
        by_env[t.env_id].append(t)
    env_ms = [1000 * turn.seconds_env for t in records for turn in t.turns]
    gen_ms = [1000 * turn.seconds_generate for t in records for turn in t.turns]

    def mean(values: list[float]) -> float:
        return statistics.fmean(values) if values else 0.0

    return Summary(
        environments=len(by_env),
        attempts=len(records),
        kept=kept,
        pass_at_1=mean([mean([float(t.passed) for t in ts]) for ts in by_env.values()]),
        pass_at_n=mean([float(any(t.passed for t in ts)) for ts in by_env.values()]),
        mean_score=mean([t.score for t in records]),
        mean_turns=mean([t.num_turns for t in records]),
        mean_tool_calls=mean([t.num_tool_calls for t in records]),
        prompt_tokens=sum(t.prompt_tokens for t in records),
        completion_tokens=sum(t.completion_tokens for t in records),
        stop_reasons=dict(Counter(t.stop_reason for t in records)),
        env_ms_per_turn_p50=statistics.median(env_ms) if env_ms else 0.0,
        generate_ms_per_turn_p50=statistics.median(gen_ms) if gen_ms else 0.0,
        failed_environments=failed,
    )


def _count_rows(out: Path) -> int:
    state = out / "state.json"
    if not state.exists():
        return 0
    from datasets import load_from_disk

    return len(load_from_disk(str(out)))


def push_to_hub(out: Path, repo: str) -> None:
    """Push the kept dataset (needs network and a token; nothing in the tests calls it)."""
    from datasets import load_from_disk

    load_from_disk(str(out)).push_to_hub(repo)


def summary_table(summary: Summary) -> list[tuple[str, str]]:
    rows = [
        ("environments", str(summary.environments)), ("attempts", str(summary.attempts)), ("kept", str(summary.kept)),
        ("pass@1", f"{summary.pass_at_1:.3f}"), ("pass@n", f"{summary.pass_at_n:.3f}"),
        ("mean native score", f"{summary.mean_score:.3f}"), ("mean turns", f"{summary.mean_turns:.2f}"),
        ("mean tool calls", f"{summary.mean_tool_calls:.2f}"),
        ("tokens (prompt / completion)", f"{summary.prompt_tokens} / {summary.completion_tokens}"),
        ("stop reasons", json.dumps(summary.stop_reasons, sort_keys=True)),
        ("env ms per turn (p50)", f"{summary.env_ms_per_turn_p50:.3f}"),
        ("generation ms per turn (p50)", f"{summary.generate_ms_per_turn_p50:.3f}"),
    ]
    if summary.failed_environments:
        rows.append(("environments that failed to load", str(len(summary.failed_environments))))
    return rows
