"""Metric functions against values worked out by hand."""

from __future__ import annotations

import pytest

from envtrain.eval.metrics import group_metrics, pass_at_k, pass_at_k_run, pooled_rubric_rate, task_results
from envtrain.eval.records import EpisodeRow


def row(task, attempt, passed, score, **kw) -> EpisodeRow:
    return EpisodeRow(task_id=task, benchmark="t", attempt=attempt, policy="p", passed=passed, score=score, **kw)


def test_pass_at_k_matches_the_unbiased_estimator_by_hand() -> None:
    # n=5, c=2: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass@3 = 1 - C(3,3)/C(5,3) = 1 - 1/10; pass@4 = 1
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9)
    assert pass_at_k(5, 2, 4) == 1.0 and pass_at_k(5, 2, 5) == 1.0
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 4, 1) == 1.0
    # n=10, c=3, k=5: 1 - C(7,5)/C(10,5) = 1 - 21/252
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_task_results_and_run_aggregates() -> None:
    rows = [
        row("a", 0, True, 1.0, items_passed=4, items_total=4, turns=3, tool_calls=2, prompt_tokens=100, completion_tokens=10),
        row("a", 1, False, 0.75, items_passed=3, items_total=4, turns=5, tool_calls=4, stop_reason="turn_limit"),
        row("b", 0, False, 0.5, items_passed=1, items_total=2, turns=1, tool_calls=0, group="g2"),
        row("b", 1, False, 0.0, items_passed=0, items_total=2, turns=1, tool_calls=0, group="g2"),
    ]
    a, b = task_results(rows)
    assert (a.task_id, a.attempts, a.passes, a.pass_at_1) == ("a", 2, 1, 0.5)
    assert a.pass_at_k == {"1": 0.5, "2": 1.0}
    assert a.mean_score == pytest.approx(0.875) and a.threshold_pass == 0.5  # 0.75 < 0.8
    assert a.mean_turns == 4 and a.mean_tool_calls == 3 and a.mean_prompt_tokens == 50
    assert a.stop_reasons == {"done": 1, "turn_limit": 1}
    assert b.pass_at_k == {"1": 0.0, "2": 0.0} and b.mean_score == 0.25
    # pooled: (4+3+1+0) / (4+4+2+2) = 8/12, not the mean of per-task rates (7/8 and 1/4)
    assert pooled_rubric_rate([a, b]) == pytest.approx(8 / 12)
    assert pass_at_k_run([a, b]) == {"1": 0.25, "2": 0.5}
    groups = group_metrics([a, b])
    assert list(groups) == ["", "g2"] and groups["g2"].mean_score == 0.25
    assert task_results(rows, threshold=0.7)[0].threshold_pass == 1.0
