"""The GRPO prompt set: environments, optionally mixed by teacher pass band plus an exploration set (LegoEnv §5.4).

    data, report = build_prompt_set(PromptSetConfig(envs="envs/", teacher="runs/teacher", band=(1, 6)))

LegoEnv trained on the environments a teacher solved in one to six of eight attempts (learnable:
neither hopeless nor saturated) plus every environment it never solved, kept as an exploration set
and sampled like the others. The teacher's counts come from an ``envtrain collect`` output (its
shards hold every attempt, passed or not). Without a teacher every environment is used.

Each row: ``prompt`` (the system and user messages every envtrain rollout starts from), ``env_id``,
``group`` (band / exploration / all) and ``teacher_passes``. ``prompt[0]["env_id"]`` also carries the
id, because TRL hands ``rollout_func`` the prompts and nothing else of the row.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envtrain.train.config import ConfigError


class PromptSetConfig(BaseModel):
    """Which environments GRPO trains on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    envs: Path  # a folder of environment documents (searched recursively) or one file
    teacher: Path | None = None  # an envtrain collect output with several attempts per environment; null uses every environment
    band: tuple[int, int] = (1, 6)  # keep environments the teacher passed between these many times, inclusive (LegoEnv: 1-6 of 8)
    exploration: bool = True  # also keep environments the teacher never solved (LegoEnv §5.4's exploration set)
    max_exploration: float | None = Field(default=None, gt=0)  # cap the exploration set at this share of the band set; null keeps all
    unrated: bool = False  # keep environments the teacher never attempted
    seed: int = 0  # for the exploration cap's sample

    @model_validator(mode="after")
    def _band_ordered(self) -> PromptSetConfig:
        low, high = self.band
        if not 0 <= low <= high:
            raise ValueError(f"band must be (low, high) with 0 <= low <= high, got {list(self.band)}")
        return self


class PromptSetReport(BaseModel):
    environments: int  # loaded
    band: int  # kept from the teacher band (or all, without a teacher)
    exploration: int  # kept never-solved ones
    dropped_easy: int  # above the band
    dropped_hard: int  # below the band but solved at least once (only when band starts above 1)
    unrated: int  # never attempted by the teacher
    failed: dict[str, str] = Field(default_factory=dict)  # file -> why it did not load


def teacher_passes(teacher: Path) -> dict[str, tuple[int, int]]:
    """env id -> (passes, attempts) over every attempt an ``envtrain collect`` run recorded."""
    from envtrain.rollout.store import TrajectoryStore

    if not (teacher / "shards").is_dir():
        raise ConfigError(f"teacher {str(teacher)!r} is not an envtrain collect output (no shards/ folder)")
    data = TrajectoryStore(teacher).all()
    if data is None:
        raise ConfigError(f"teacher {str(teacher)!r} holds no attempts")
    passes: Counter[str] = Counter()
    attempts: Counter[str] = Counter()
    for row in data.select_columns(["env_id", "passed"]).to_list():
        attempts[row["env_id"]] += 1
        passes[row["env_id"]] += bool(row["passed"])
    return {env: (passes[env], attempts[env]) for env in attempts}


def load_environments(root: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """env id -> Environment (first file wins on duplicates), and file -> error for those that did not load."""
    from envtrain.core.env import Environment
    from envtrain.core.errors import SpecError
    from envtrain.rollout.collect import env_files

    envs: dict[str, Any] = {}
    failed: dict[str, str] = {}
    try:
        files = env_files(Path(root))
    except SpecError as exc:
        raise ConfigError(str(exc)) from None
    for path in files:
        try:
            env = Environment.load(path)
        except SpecError as exc:
            failed[str(path)] = str(exc)
            continue
        envs.setdefault(env.id, env)
    if not envs:
        raise ConfigError(f"no environment loaded from {root}")
    return envs, failed


def prompt_messages(env: Any) -> list[dict[str, Any]]:
    """The conversation every rollout of ``env`` starts from (as in ``envtrain collect``), tagged with its id."""
    from types import SimpleNamespace

    from envtrain.rollout.episode import first_messages

    # first_messages reads only runtime.env, so the environment need not be compiled to build its prompt.
    messages = first_messages(SimpleNamespace(env=env))  # type: ignore[arg-type]
    return [{**m, "env_id": env.id if i == 0 else None} for i, m in enumerate(messages)]


def build_prompt_set(cfg: PromptSetConfig) -> tuple[Any, dict[str, Any], PromptSetReport]:
    """The prompt dataset, the environments by id, and what was kept or dropped."""
    from datasets import Dataset

    envs, failed = load_environments(cfg.envs)
    rated = teacher_passes(cfg.teacher) if cfg.teacher is not None else None
    low, high = cfg.band
    band, explore, easy, hard, unrated = [], [], 0, 0, 0
    for env_id in sorted(envs):
        if rated is None:
            band.append((env_id, "all", -1))
            continue
        if env_id not in rated:
            unrated += 1
            if cfg.unrated:
                band.append((env_id, "unrated", -1))
            continue
        passes, _ = rated[env_id]
        if low <= passes <= high:
            band.append((env_id, "band", passes))
        elif passes == 0 and cfg.exploration:
            explore.append((env_id, "exploration", 0))
        elif passes > high:
            easy += 1
        else:
            hard += 1
    if cfg.max_exploration is not None and explore:
        cap = max(1, int(cfg.max_exploration * len(band)))
        explore = sorted(random.Random(cfg.seed).sample(explore, min(cap, len(explore))))
    rows = band + explore
    if not rows:
        raise ConfigError(f"no environment under {cfg.envs} falls in the teacher band {list(cfg.band)} or the exploration set")
    data = Dataset.from_list([
        {"prompt": prompt_messages(envs[env_id]), "env_id": env_id, "group": group, "teacher_passes": passes}
        for env_id, group, passes in rows
    ])
    report = PromptSetReport(environments=len(envs), band=len(band), exploration=len(explore), dropped_easy=easy,
                             dropped_hard=hard, unrated=unrated, failed=failed)
    return data, {env_id: envs[env_id] for env_id, _, _ in rows}, report


__all__ = ["PromptSetConfig", "PromptSetReport", "build_prompt_set", "load_environments", "prompt_messages", "teacher_passes"]
