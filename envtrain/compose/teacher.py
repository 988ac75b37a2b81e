"""The teacher step (LegoEnv §3.5): a teacher policy attempts every admitted environment N times.

It runs through the rollout engine (``envtrain.rollout.collect``) with any policy spec that
``envtrain.agent.registry.make_policy`` accepts (oracle, noop, random, hf:PATH, openai:URL, vllm:MODEL),
so the verifier-accepted trajectories land in OUT/teacher as an SFT-ready dataset (at most
``keep_per_env`` per environment), and a rerun resumes from the shards already written.

What the step decides, per environment, from its k passing attempts out of N:
- ``unsolved`` (k = 0): the evolution trigger; the environment is diagnosed (evolve.py);
- ``learnable`` (1 <= k <= N - 2): the teacher band the paper trains RL on (one to six successes in eight);
- ``easy`` (k >= N - 1);
- ``teacher error``: every attempt ended in a policy error (an endpoint that cannot be reached):
  nothing is learned about the environment, so it is not diagnosed.
The oracle, noop and random policies are fixtures: their yields describe the pipeline, never a model.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable

from pydantic import BaseModel, ConfigDict, Field

from envtrain.core.errors import SpecError

FIXTURES = ("oracle", "noop", "random")
BANDS = ("unsolved", "learnable", "easy", "teacher error")
_KINDS = ("oracle", "noop", "random", "hf", "openai", "vllm")


class TeacherSettings(BaseModel):
    """How the teacher attempts each environment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempts: int = Field(8, ge=1, description="episodes per environment (the paper's N = 8)")
    max_turns: int = Field(50, ge=1, description="assistant turns per episode")
    max_tokens: int = Field(1024, ge=1, description="tokens per assistant turn")
    temperature: float = Field(0.7, ge=0.0, description="sampling temperature")
    concurrency: int = Field(8, ge=1, description="episodes in flight at once")
    keep_per_env: int = Field(3, ge=1, description="verifier-accepted trajectories kept per environment (the SFT corpus)")


class TeacherResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    attempts: int  # episodes counted (policy errors excluded)
    passed: int
    errors: int = 0  # episodes that ended in a policy error
    band: str

    def to_entry(self, policy: str) -> dict[str, Any]:
        return {"policy": policy, **self.model_dump()}


def check_spec(spec: str) -> str:
    """A policy spec's form, checked without loading anything (a model loads only when the step runs)."""
    kind, sep, arg = spec.strip().partition(":")
    if kind not in _KINDS or (kind in ("hf", "openai", "vllm") and not arg.strip()) or (kind in ("oracle", "noop") and sep):
        from envtrain.agent.registry import SPEC_FORMS

        raise SpecError(f"unknown teacher policy {spec!r}: use one of {SPEC_FORMS}")
    return spec.strip()


def is_fixture(spec: str) -> bool:
    return spec.partition(":")[0] in FIXTURES


def band(passed: int, attempts: int, errors: int = 0) -> str:
    if attempts == 0:
        return "teacher error" if errors else "unsolved"
    if passed == 0:
        return "unsolved"
    return "easy" if passed >= attempts - 1 else "learnable"


def run_teacher(envs: Path, out: Path, spec: str, settings: TeacherSettings, *,
                progress: Callable[[int, int], None] | None = None) -> dict[str, TeacherResult]:
    """Attempt every environment under ``envs`` ``settings.attempts`` times (resuming what ``out`` holds)."""
    from envtrain.agent.registry import make_policy
    from envtrain.agent.types import SamplingParams
    from envtrain.rollout.collect import CollectConfig, collect
    from envtrain.rollout.episode import RolloutLimits

    config = CollectConfig(
        envs=envs, out=out, attempts=settings.attempts, keep_per_env=settings.keep_per_env, concurrency=settings.concurrency,
        sampling=SamplingParams(temperature=settings.temperature, max_tokens=settings.max_tokens),
        limits=RolloutLimits(max_turns=settings.max_turns))
    done, total = [0], [0]

    def started(n: int) -> None:
        total[0] = n
        if progress:
            progress(0, n)

    def finished(_: Any) -> None:
        done[0] += 1
        if progress:
            progress(done[0], total[0])

    async def go() -> None:
        policy = make_policy(check_spec(spec))
        try:
            await collect(config, policy, on_episode=finished, on_start=started)
        finally:
            await policy.aclose()

    asyncio.run(go())
    return results_of(out, settings.attempts)


def results_of(out: Path, attempts: int) -> dict[str, TeacherResult]:
    """Per environment: passing attempts among the first ``attempts`` on disk, and the band."""
    from envtrain.rollout.store import TrajectoryStore

    data = TrajectoryStore(out).all()
    if data is None:
        return {}
    passed: Counter[str] = Counter()
    counted: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for row in data.select_columns(["env_id", "attempt", "passed", "stop_reason"]).to_list():
        if row["attempt"] >= attempts:
            continue
        if row["stop_reason"] == "error":
            errors[row["env_id"]] += 1
            continue
        counted[row["env_id"]] += 1
        passed[row["env_id"]] += bool(row["passed"])
    ids = set(counted) | set(errors)
    return {i: TeacherResult(attempts=counted[i], passed=passed[i], errors=errors[i], band=band(passed[i], counted[i], errors[i]))
            for i in sorted(ids)}


def attempts_of(out: Path, env_ids: Iterable[str]) -> dict[str, list[Any]]:
    """The failed attempts' evidence (failed assertions, tool errors, the calls made) for diagnosis, per environment."""
    from envtrain.compose.evolve import Attempt, short_call
    from envtrain.rollout.store import TrajectoryStore
    from envtrain.rollout.trajectory import Trajectory

    wanted = set(env_ids)
    data = TrajectoryStore(out).all()
    if data is None or not wanted:
        return {}
    rows = data.select_columns(["env_id"]).to_list()
    picked = data.select([i for i, r in enumerate(rows) if r["env_id"] in wanted])
    out_: dict[str, list[Any]] = {}
    for record in picked["record"]:
        traj = Trajectory.model_validate_json(record)
        failed = tuple(a.get("name", "") for a in traj.assertions if not a.get("holds"))
        errors = tuple(str(m.get("content", "")) for m in traj.messages if m.get("role") == "tool" and _is_error(m.get("content")))
        calls = tuple(short_call(c.get("function", {}).get("name", "?"), c.get("function", {}).get("arguments", ""))
                      for m in traj.messages if m.get("role") == "assistant" for c in m.get("tool_calls") or ())
        attempt = Attempt(passed=traj.passed, failed=failed, errors=errors, calls=calls, stop=traj.stop_reason)
        out_.setdefault(traj.env_id, []).append(attempt)
    return out_


def _is_error(content: Any) -> bool:
    try:
        value = json.loads(content) if isinstance(content, str) else None
        return isinstance(value, dict) and set(value) == {"error"}
    except (ValueError, TypeError):
        return False


def summarize(results: dict[str, TeacherResult], spec: str, settings: TeacherSettings) -> dict[str, Any]:
    bands = Counter(r.band for r in results.values())
    scored = [r for r in results.values() if r.band != "teacher error"]
    return {
        "policy": spec, "fixture": is_fixture(spec), "attempts": settings.attempts, "environments": len(results),
        "yield": round(sum(r.passed > 0 for r in scored) / len(scored), 4) if scored else None,
        "pass_rate": round(sum(r.passed for r in scored) / max(1, sum(r.attempts for r in scored)), 4) if scored else None,
        "bands": {b: bands.get(b, 0) for b in BANDS},
    }


__all__ = ["BANDS", "FIXTURES", "TeacherResult", "TeacherSettings", "attempts_of", "band", "check_spec", "is_fixture",
           "results_of", "run_teacher", "summarize"]
