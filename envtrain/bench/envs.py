"""envtrain environment collections (composed, scaled, synthesized, the examples, BFCL's exports)
as a benchmark: each environment's own verifier grades it, episodes run on the one rollout engine.

Lineages: a task's depth is its provenance depth, its root the environment its parent chain
starts from (followed through the loaded set; a ``lineages/<root>/<depth>.json`` layout, as
``envtrain scale`` writes, names the root of a chain whose start is not loaded).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Mapping

from envtrain.agent.types import Policy, SamplingParams
from envtrain.bench.types import Episode, EpisodeLimits, Grade, TaskInfo
from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.core.runtime import Handler

BENCHMARK = "envs"
ENV_SUFFIXES = (".json", ".yaml", ".yml")
DEFAULT_TURNS = 50
DEFAULT_TOKENS = 65_536


class EnvTask(TaskInfo):
    path: str
    env: Environment


def env_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise ValueError(f"{root}: no such file or folder")
    return sorted(p for p in root.rglob("*") if p.suffix in ENV_SUFFIXES and p.is_file() and not p.name.startswith(".")
                  and not p.name.endswith((".plan.json", ".validation.json")))


def _layout_root(path: Path) -> str | None:
    # envtrain scale writes DIR/lineages/<root id>/<depth>.json
    if path.stem.isdigit() and path.parent.parent.name == "lineages":
        return path.parent.name
    return None


def _root(env: Environment, path: Path, loaded: Mapping[str, tuple[Path, Environment]]) -> str:
    """The lineage root: the layout's name for it, else the start of the parent chain within the
    loaded set, else the oldest ancestor the chain names."""
    named = _layout_root(path)
    if named:
        return named
    node, seen = env, {env.id}
    while node.provenance.parent:
        parent = node.provenance.parent
        if parent not in loaded or parent in seen:
            return parent
        seen.add(parent)
        node = loaded[parent][1]
    return node.id


class EnvsAdapter:
    def __init__(self, root: str | Path, *, limit: int | None = None, handlers: Mapping[str, Handler] | None = None) -> None:
        self.root = Path(root)
        if not self.root.exists():
            raise ValueError(f"{self.root}: no such file or folder")
        self.name = f"{BENCHMARK}:{root}"
        self.limit = limit
        self.handlers = handlers
        self.failed: dict[str, str] = {}  # file -> why it did not load
        self._tasks: list[EnvTask] | None = None

    def _handlers(self) -> Mapping[str, Handler]:
        if self.handlers is None:
            # Built-in handlers and BFCL's, so exported BFCL environments evaluate like any other;
            # without bfcl-eval installed, the built-in ones (a BFCL document then fails to load, saying so).
            try:
                from envtrain.bench.bfcl.env import bfcl_handlers

                self.handlers = bfcl_handlers()
            except ImportError:
                from envtrain.apps.handlers import builtin_handlers

                self.handlers = builtin_handlers()
        return self.handlers

    def tasks(self) -> list[EnvTask]:
        if self._tasks is not None:
            return self._tasks
        loaded: dict[str, tuple[Path, Environment]] = {}
        for path in env_files(self.root):
            try:
                env = Environment.load(path)
            except SpecError as exc:
                self.failed[str(path)] = str(exc)
                continue
            loaded.setdefault(env.id, (path, env))
        tasks = []
        for env_id, (path, env) in loaded.items():
            tasks.append(EnvTask(id=env_id, benchmark=BENCHMARK, group=env.provenance.source, depth=env.provenance.depth,
                                 root=_root(env, path, loaded), source=str(path), path=str(path), env=env))
        self._tasks = tasks[: self.limit] if self.limit else tasks
        return self._tasks

    def fixture_policy(self) -> Policy:
        from envtrain.agent.baselines import OraclePolicy

        return OraclePolicy()

    async def episode(self, task: TaskInfo, policy: Policy, params: SamplingParams, limits: EpisodeLimits, attempt: int) -> Episode:
        from envtrain.core.session import Runtime
        from envtrain.rollout.episode import RolloutLimits, run_episode

        assert isinstance(task, EnvTask)
        runtime = await asyncio.to_thread(Runtime, task.env, handlers=self._handlers())
        rollout = RolloutLimits(max_turns=limits.max_turns or DEFAULT_TURNS,
                                max_episode_tokens=limits.max_episode_tokens or DEFAULT_TOKENS, max_seconds=limits.max_seconds)
        trajectory = await run_episode(runtime, policy, params, rollout, attempt=attempt)
        return Episode(task=task, trajectory=trajectory)

    def grade(self, episode: Episode) -> Grade:
        # The rollout engine ran the environment's verifier on the world the episode left.
        t = episode.trajectory
        holding = sum(bool(a.get("holds")) for a in t.assertions)
        failed = [a.get("name", "") for a in t.assertions if not a.get("holds")]
        detail: dict[str, Any] = {"failed_assertions": failed[:20]} if failed else {}
        return Grade(passed=t.passed, score=t.score, items_passed=holding, items_total=len(t.assertions), detail=detail)
