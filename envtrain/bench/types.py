"""The adapter interface every benchmark implements, and the records it exchanges with ``envtrain.eval``.

An adapter lists its tasks, runs one episode of a task with any ``Policy``, and grades it with
the benchmark's own verifier. A fourth benchmark is one module with one class that does these
three things (``envtrain.bench.reasoning_gym`` is the smallest example) and a line in
``envtrain.bench.registry``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from envtrain.agent.types import Policy, SamplingParams
from envtrain.rollout.trajectory import Trajectory


class TaskInfo(BaseModel):
    """What evaluation needs to know about a task, whatever the benchmark."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str  # unique within the benchmark: "multi_turn_base_0", "leg_counting:L2:7", an environment id
    benchmark: str  # "bfcl-multi-turn", "reasoning-gym", "envs"
    group: str = ""  # category, dataset or source: the rows of the per-group table
    depth: int = 0  # lineage depth (scaled environments) or difficulty level (curricula)
    root: str = ""  # lineage root: pairs a scaled environment with its original
    source: str = ""  # where it came from (a file, a package and version)


class EpisodeLimits(BaseModel):
    """Per-episode bounds; ``None`` means the benchmark's own protocol decides."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_turns: int | None = Field(default=None, ge=1)  # assistant turns per episode
    max_episode_tokens: int | None = Field(default=None, ge=1)  # last prompt + all completions
    max_seconds: float = Field(default=600.0, gt=0)


class Grade(BaseModel):
    """A benchmark's verdict on one episode."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    passed: bool
    score: float = Field(ge=0.0, le=1.0)  # native score: share of assertions, reasoning-gym's score, 0/1 for BFCL
    items_passed: int = 0  # rubric items that hold (assertions, checks), for the pooled rate
    items_total: int = 0
    detail: dict[str, Any] = Field(default_factory=dict)  # the benchmark's own explanation (error type, message)
    seconds: float | None = None  # grading time; None where the episode itself ran the verifier


@dataclass
class Episode:
    """One finished episode: the trajectory, and what the grader needs that a trajectory does not keep."""

    task: TaskInfo
    trajectory: Trajectory
    native: dict[str, Any] = field(default_factory=dict)  # e.g. BFCL's decoded calls per user turn


@runtime_checkable
class Adapter(Protocol):
    """A benchmark. Implementations import their benchmark's package lazily."""

    name: str  # the spec it was made from: "bfcl-multi-turn:base"

    def tasks(self) -> Sequence[TaskInfo]:
        """Every task, in a fixed order."""
        ...

    def fixture_policy(self) -> Policy:
        """The benchmark's gold replay (``--policy oracle``): checks the wiring, never a model result."""
        ...

    async def episode(self, task: TaskInfo, policy: Policy, params: SamplingParams, limits: EpisodeLimits, attempt: int) -> Episode:
        """Run one episode; never raises for the policy's or the tools' faults (they become stop reasons)."""
        ...

    def grade(self, episode: Episode) -> Grade:
        """The benchmark's own verdict on the episode."""
        ...
