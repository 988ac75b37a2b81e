"""RES Eq. 4 (current retained state) and Eq. 5 (historical mean) against hand-computed values."""

from __future__ import annotations

import pytest

from envtrain.eval.depth import at, current_state_mean, depth_table, has_lineages, historical_mean
from tests.eval.test_paired import result

# Three lineages: one stops at depth 1, one reaches 3, one is never scaled.
L1 = {0: 1.0, 1: 0.5}
L2 = {0: 1.0, 1: 0.8, 2: 0.4, 3: 0.0}
L3 = {0: 0.6}


def test_current_state_mean_keeps_stopped_lineages_at_their_last_environment() -> None:
    lineages = [L1, L2, L3]
    assert current_state_mean(lineages, 0) == pytest.approx((1.0 + 1.0 + 0.6) / 3)
    assert current_state_mean(lineages, 1) == pytest.approx((0.5 + 0.8 + 0.6) / 3)
    assert current_state_mean(lineages, 2) == pytest.approx((0.5 + 0.4 + 0.6) / 3)
    assert current_state_mean(lineages, 3) == pytest.approx((0.5 + 0.0 + 0.6) / 3)
    assert current_state_mean(lineages, 10) == current_state_mean(lineages, 3)


def test_historical_mean_averages_budgets_zero_to_d_per_task_then_tasks() -> None:
    lineages = [L1, L2, L3]
    # d = 2: L1 -> (1 + .5 + .5)/3, L2 -> (1 + .8 + .4)/3, L3 -> .6
    assert historical_mean(lineages, 2) == pytest.approx(((2.0 / 3) + (2.2 / 3) + 0.6) / 3)
    assert historical_mean(lineages, 0) == current_state_mean(lineages, 0)
    # d = 3: L1 -> (1 + .5 + .5 + .5)/4, L2 -> (1 + .8 + .4 + 0)/4, L3 -> .6
    assert historical_mean(lineages, 3) == pytest.approx((2.5 / 4 + 2.2 / 4 + 0.6) / 3)


def test_a_skipped_depth_carries_the_evaluated_one_below() -> None:
    assert at({0: 1.0, 2: 0.0}, 1) == 1.0 and at({0: 1.0, 2: 0.0}, 5) == 0.0


def test_depth_table_from_task_results() -> None:
    rs = [result("a0", 1.0, root="a"), result("a1", 0.5, root="a", depth=1),
          result("b0", 1.0, root="b"), result("b1", 0.8, root="b", depth=1), result("b2", 0.4, root="b", depth=2)]
    assert has_lineages(rs)
    rows = depth_table(rs)
    assert [r.depth for r in rows] == [0, 1, 2]
    assert [(r.reach, r.continue_) for r in rows] == [(2, 2), (2, 1), (1, 0)]
    assert rows[2].current["mean_score"] == pytest.approx((0.5 + 0.4) / 2)
    assert rows[2].historical["mean_score"] == pytest.approx(((1 + 0.5 + 0.5) / 3 + (1 + 0.8 + 0.4) / 3) / 2)
    assert rows[1].mean["mean_score"] == pytest.approx(0.65) and rows[1].n_tasks == 2
    assert rows[2].current["threshold_pass"] == 0.0 and rows[1].current["threshold_pass"] == 0.5
    flat = depth_table([result("x", 1.0, depth=0), result("y", 0.0, depth=2)])  # levels, not lineages
    assert not has_lineages([result("x", 1.0), result("y", 0.0, depth=2)])
    assert [r.depth for r in flat] == [0, 1, 2] and flat[1].mean == {} and flat[0].current is None
