"""Measurements by recursion depth (RES App. C.1).

For lineage i with measurements m_i(r) at depths 0..D_i (D_i its final depth; a stopped lineage
keeps its last accepted environment):

    current-state mean   M_m(d) = 1/N sum_i m_i(min(d, D_i))                          (Eq. 4)
    historical mean      H_m(d) = 1/N sum_i 1/(d+1) sum_{r=0..d} m_i(min(r, D_i))      (Eq. 5)

A depth a lineage skipped (not evaluated) takes the measurement of the nearest evaluated depth
below it, as a stopped lineage carries its final measurement forward. Only lineages whose
original (depth 0) was evaluated enter the means: Eq. 5 starts every task at its original.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Mapping, Sequence

from envtrain.eval.metrics import mean
from envtrain.eval.records import DepthRow, TaskResult

Lineage = Mapping[int, float]  # depth -> measurement

MEASURES: dict[str, Callable[[TaskResult], float]] = {
    "pass_at_1": lambda r: r.pass_at_1,
    "threshold_pass": lambda r: r.threshold_pass,
    "mean_score": lambda r: r.mean_score,
    "mean_turns": lambda r: r.mean_turns,
    "mean_tool_calls": lambda r: r.mean_tool_calls,
    "mean_tokens": lambda r: r.mean_prompt_tokens + r.mean_completion_tokens,
}


def at(lineage: Lineage, r: int) -> float:
    """m_i(min(r, D_i)), carrying the nearest evaluated depth at or below it forward."""
    final = max(lineage)
    r = min(r, final)
    while r not in lineage:
        r -= 1
        if r < 0:
            raise ValueError("a lineage needs a measurement at its smallest depth or below the asked one")
    return lineage[r]


def current_state_mean(lineages: Sequence[Lineage], d: int) -> float:
    """RES Eq. 4."""
    return sum(at(m, d) for m in lineages) / len(lineages)


def historical_mean(lineages: Sequence[Lineage], d: int) -> float:
    """RES Eq. 5."""
    return sum(sum(at(m, r) for r in range(d + 1)) / (d + 1) for m in lineages) / len(lineages)


def lineages_of(results: Sequence[TaskResult], measure: Callable[[TaskResult], float]) -> dict[str, dict[int, float]]:
    """root -> depth -> measurement (mean over the tasks of that root at that depth)."""
    cells: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        cells[r.root or r.task_id][r.depth].append(measure(r))
    return {root: {d: mean(v) for d, v in sorted(depths.items())} for root, depths in cells.items() if 0 in depths}


def has_lineages(results: Sequence[TaskResult]) -> bool:
    """Whether some root was evaluated at depth 0 and at a deeper depth."""
    depths: dict[str, set[int]] = defaultdict(set)
    for r in results:
        depths[r.root or r.task_id].add(r.depth)
    return any(0 in d and len(d) > 1 for d in depths.values())


def depth_table(results: Sequence[TaskResult]) -> list[DepthRow]:
    """One row per depth: means at exactly that depth; with lineages, Eq. 4 and 5 at that budget."""
    if not results:
        return []
    by_depth: dict[int, list[TaskResult]] = defaultdict(list)
    for r in results:
        by_depth[r.depth].append(r)
    lineage_mode = has_lineages(results)
    per_measure = {name: list(lineages_of(results, fn).values()) for name, fn in MEASURES.items()} if lineage_mode else {}
    finals = [max(m) for m in per_measure["mean_score"]] if lineage_mode else []
    top = max(max(by_depth), max(finals, default=0))
    rows = []
    for d in range(min(by_depth), top + 1):
        here = by_depth.get(d, [])
        row = DepthRow(depth=d, n_tasks=len(here), mean={name: mean(fn(r) for r in here) for name, fn in MEASURES.items()} if here else {})
        if lineage_mode:
            row.reach = sum(f >= d for f in finals)
            row.continue_ = sum(f > d for f in finals)
            row.current = {name: current_state_mean(ls, d) for name, ls in per_measure.items()}
            row.historical = {name: historical_mean(ls, d) for name, ls in per_measure.items()}
        rows.append(row)
    return rows
