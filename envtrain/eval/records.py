"""Evaluation records: one row per episode, one per task, and the run's aggregate metrics."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

THRESHOLD = 0.8  # RES's success threshold on the native score (Claw Pass@1, TCR@80)


class EpisodeRow(BaseModel):
    """One attempt of one task, graded."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    benchmark: str
    group: str = ""
    depth: int = 0
    root: str = ""
    attempt: int = 0
    policy: str
    fixture: bool = False  # a gold replay (oracle): checks wiring, never a model result
    passed: bool
    score: float
    items_passed: int = 0
    items_total: int = 0
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stop_reason: str = "done"
    seconds: float = 0.0
    grade_seconds: float | None = None  # None: the verifier ran inside the episode (environments)
    trajectory_id: str = ""
    detail: dict[str, Any] = Field(default_factory=dict)


class TaskResult(BaseModel):
    """A task's attempts, aggregated."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    benchmark: str
    group: str = ""
    depth: int = 0
    root: str = ""
    attempts: int
    passes: int
    pass_at_1: float  # passes / attempts, the unbiased pass@1
    pass_at_k: dict[str, float]  # k -> unbiased estimate, k = 1..attempts
    mean_score: float
    threshold_pass: float  # share of attempts with score >= THRESHOLD
    items_passed: int
    items_total: int
    mean_turns: float
    mean_tool_calls: float
    mean_prompt_tokens: float
    mean_completion_tokens: float
    stop_reasons: dict[str, int]


class GroupMetrics(BaseModel):
    n_tasks: int
    pass_at_1: float
    mean_score: float
    threshold_pass: float
    mean_turns: float
    mean_tool_calls: float


class DepthRow(BaseModel):
    """One depth (or difficulty level). ``mean_*`` average the tasks at exactly this depth; with
    lineages, ``current``/``historical`` are RES Eq. 4 and Eq. 5 at budget d over all lineages."""

    depth: int
    n_tasks: int  # tasks evaluated at exactly this depth
    reach: int | None = None  # lineages reaching this depth
    continue_: int | None = Field(default=None, alias="continue")  # lineages going deeper
    mean: dict[str, float]  # measure -> mean over tasks at this depth
    current: dict[str, float] | None = None  # measure -> M_m(d)
    historical: dict[str, float] | None = None  # measure -> H_m(d)

    model_config = ConfigDict(populate_by_name=True)


class Metrics(BaseModel):
    """metrics.json."""

    benchmark: str
    policy: str
    fixture: bool
    n_tasks: int
    n_episodes: int
    attempts: int  # per task (the most any task got)
    pass_at_1: float  # mean over tasks of per-task pass@1
    pass_at_k: dict[str, float]
    mean_score: float  # mean over tasks of the per-task mean native score
    threshold: float = THRESHOLD
    threshold_pass: float  # mean over tasks of the share of attempts scoring >= threshold
    pooled_rubric_pass_rate: float  # rubric items holding / items, pooled over every episode (RES's RPR)
    mean_turns: float
    mean_tool_calls: float
    mean_tool_errors: float
    mean_prompt_tokens: float
    mean_completion_tokens: float
    stop_reasons: dict[str, int]
    grade_ms_p50: float | None  # the benchmark's own grader, per episode (None: it ran inside the episodes)
    episode_seconds_p50: float
    by_group: dict[str, GroupMetrics]
    by_depth: list[DepthRow]
    lineages: int = 0  # roots with more than one depth evaluated
    original_vs_deepest: dict[str, Any] | None = None  # paired comparison inside the run, when lineages exist
    not_loaded: dict[str, str] = Field(default_factory=dict)  # task files that did not load, and why
