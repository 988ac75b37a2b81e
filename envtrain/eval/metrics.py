"""Metrics over graded episodes: per task, per group and for the run (pass@1, unbiased pass@k,
native score, threshold pass, pooled rubric rate, turns, tool calls, tokens, stop reasons)."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from math import comb
from typing import Iterable, Sequence

from envtrain.eval.records import THRESHOLD, EpisodeRow, GroupMetrics, TaskResult


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n attempts with c passes (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.fmean(values) if values else 0.0


def task_results(rows: Sequence[EpisodeRow], threshold: float = THRESHOLD) -> list[TaskResult]:
    """One result per task, in the order tasks first appear."""
    by_task: dict[str, list[EpisodeRow]] = defaultdict(list)
    for row in rows:
        by_task[row.task_id].append(row)
    out = []
    for task_id, attempts in by_task.items():
        first, n = attempts[0], len(attempts)
        c = sum(r.passed for r in attempts)
        out.append(TaskResult(
            task_id=task_id, benchmark=first.benchmark, group=first.group, depth=first.depth, root=first.root,
            attempts=n, passes=c, pass_at_1=c / n, pass_at_k={str(k): pass_at_k(n, c, k) for k in range(1, n + 1)},
            mean_score=mean(r.score for r in attempts), threshold_pass=mean(float(r.score >= threshold) for r in attempts),
            items_passed=sum(r.items_passed for r in attempts), items_total=sum(r.items_total for r in attempts),
            mean_turns=mean(r.turns for r in attempts), mean_tool_calls=mean(r.tool_calls for r in attempts),
            mean_prompt_tokens=mean(r.prompt_tokens for r in attempts),
            mean_completion_tokens=mean(r.completion_tokens for r in attempts),
            stop_reasons=dict(Counter(r.stop_reason for r in attempts)),
        ))
    return out


def pooled_rubric_rate(results: Sequence[TaskResult]) -> float:
    """Rubric items holding over all items, pooled across tasks (RES's RPR), not averaged per task."""
    total = sum(r.items_total for r in results)
    return sum(r.items_passed for r in results) / total if total else 0.0


def pass_at_k_run(results: Sequence[TaskResult]) -> dict[str, float]:
    """pass@k averaged over tasks, for every k that all tasks support."""
    if not results:
        return {}
    kmax = min(r.attempts for r in results)
    return {str(k): mean(r.pass_at_k[str(k)] for r in results) for k in range(1, kmax + 1)}


def group_metrics(results: Sequence[TaskResult]) -> dict[str, GroupMetrics]:
    groups: dict[str, list[TaskResult]] = defaultdict(list)
    for r in results:
        groups[r.group].append(r)
    return {
        name: GroupMetrics(
            n_tasks=len(rs), pass_at_1=mean(r.pass_at_1 for r in rs), mean_score=mean(r.mean_score for r in rs),
            threshold_pass=mean(r.threshold_pass for r in rs), mean_turns=mean(r.mean_turns for r in rs),
            mean_tool_calls=mean(r.mean_tool_calls for r in rs),
        )
        for name, rs in sorted(groups.items())
    }
