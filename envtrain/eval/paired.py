"""Paired comparison, task by task: wins, losses, ties, and the two-sided exact sign test
LegoEnv reports (ties dropped; p = P(|W - n/2| >= observed) under Binomial(n, 1/2))."""

from __future__ import annotations

from math import comb
from typing import Any, Literal, Sequence

from pydantic import BaseModel

from envtrain.eval.metrics import mean
from envtrain.eval.records import TaskResult


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test p-value for ``wins`` against ``losses`` (ties already dropped)."""
    if wins < 0 or losses < 0:
        raise ValueError("wins and losses are counts")
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(wins, losses) + 1))
    return min(1.0, 2 * tail / 2**n)  # exact integers until this one division


class PairedTask(BaseModel):
    key: str
    a: float
    b: float
    outcome: Literal["win", "loss", "tie"]  # from B's side: B above A is a win
    group: str = ""


class PairedResult(BaseModel):
    label_a: str
    label_b: str
    measure: str  # "mean_score" or "pass_at_1"
    key: str  # "task" or "root": how tasks were matched
    n_pairs: int
    wins: int
    losses: int
    ties: int
    p_value: float
    mean_a: float
    mean_b: float
    only_a: int  # tasks without a partner
    only_b: int
    pairs: list[PairedTask]

    def sentence(self) -> str:
        return (f"{self.label_b} vs {self.label_a} on {self.n_pairs} paired tasks ({self.measure}): "
                f"{self.wins} wins, {self.losses} losses, {self.ties} ties; two-sided sign test p = {self.p_value:.4g}")


def _index(results: Sequence[TaskResult], key: str) -> dict[str, TaskResult]:
    out: dict[str, TaskResult] = {}
    for r in results:
        k = r.task_id if key == "task" else (r.root or r.task_id)
        if key == "root" and k in out and out[k].depth >= r.depth:
            continue  # by root: the deepest environment of each lineage stands for it
        out[k] = r
    return out


def compare(a: Sequence[TaskResult], b: Sequence[TaskResult], *, label_a: str = "A", label_b: str = "B",
            measure: str = "mean_score", key: str = "auto", eps: float = 1e-9) -> PairedResult:
    """Pair tasks of two runs: by task id when they share ids (``key="auto"``), else by lineage root
    (an original environment against its scaled descendant)."""
    if measure not in ("mean_score", "pass_at_1", "threshold_pass"):
        raise ValueError(f"unknown measure {measure!r} (mean_score, pass_at_1, threshold_pass)")
    if key == "auto":
        key = "task" if {r.task_id for r in a} & {r.task_id for r in b} else "root"
    ia, ib = _index(a, key), _index(b, key)
    shared = [k for k in ia if k in ib]
    pairs = []
    for k in shared:
        va, vb = float(getattr(ia[k], measure)), float(getattr(ib[k], measure))
        outcome: Any = "win" if vb > va + eps else "loss" if vb < va - eps else "tie"
        pairs.append(PairedTask(key=k, a=va, b=vb, outcome=outcome, group=ia[k].group))
    wins = sum(p.outcome == "win" for p in pairs)
    losses = sum(p.outcome == "loss" for p in pairs)
    return PairedResult(
        label_a=label_a, label_b=label_b, measure=measure, key=key, n_pairs=len(pairs), wins=wins, losses=losses,
        ties=len(pairs) - wins - losses, p_value=sign_test(wins, losses), mean_a=mean(p.a for p in pairs),
        mean_b=mean(p.b for p in pairs), only_a=len(ia) - len(shared), only_b=len(ib) - len(shared), pairs=pairs,
    )


def original_vs_deepest(results: Sequence[TaskResult], measure: str = "mean_score") -> PairedResult | None:
    """Inside one run with lineages: each root's depth-0 environment against its deepest one."""
    roots: dict[str, list[TaskResult]] = {}
    for r in results:
        roots.setdefault(r.root or r.task_id, []).append(r)
    originals, deepest = [], []
    for root, rs in roots.items():
        rs = sorted(rs, key=lambda r: r.depth)
        if len(rs) > 1 and rs[0].depth == 0 and rs[-1].depth > 0:
            originals.append(rs[0].model_copy(update={"root": root}))
            deepest.append(rs[-1].model_copy(update={"root": root}))
    if not originals:
        return None
    return compare(originals, deepest, label_a="original (depth 0)", label_b="scaled (deepest)", measure=measure, key="root")
