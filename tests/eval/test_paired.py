"""The sign test against exact values and the published ones; pairing two runs task by task."""

from __future__ import annotations

import mpmath
import pytest

from envtrain.eval.paired import compare, original_vs_deepest, sign_test
from envtrain.eval.records import TaskResult


def result(task, score, *, root="", depth=0, passed=None) -> TaskResult:
    p = float(score >= 1.0) if passed is None else float(passed)
    return TaskResult(task_id=task, benchmark="t", root=root, depth=depth, attempts=1, passes=int(p), pass_at_1=p,
                      pass_at_k={"1": p}, mean_score=score, threshold_pass=float(score >= 0.8), items_passed=0, items_total=0,
                      mean_turns=0, mean_tool_calls=0, mean_prompt_tokens=0, mean_completion_tokens=0, stop_reasons={})


def test_sign_test_exact_values() -> None:
    assert sign_test(10, 0) == 2 / 1024
    assert sign_test(0, 10) == 2 / 1024
    assert sign_test(9, 1) == 2 * 11 / 1024  # 2 * (C(10,0) + C(10,1)) / 2^10
    assert sign_test(8, 2) == 2 * 56 / 1024  # 2 * (1 + 10 + 45) / 2^10
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0 and sign_test(1, 0) == 1.0
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def test_sign_test_reproduces_legoenv_and_an_independent_computation() -> None:
    # LegoEnv §4: 69:47 "at the 5% level (p ~ 0.05)"; App. E: 77:51 "p ~ 0.03"; 65:53 and 78:58 not significant.
    assert sign_test(69, 47) == pytest.approx(0.0507, abs=5e-4)
    assert sign_test(77, 51) == pytest.approx(0.0267, abs=5e-4)
    assert sign_test(65, 53) > 0.05 and sign_test(78, 58) > 0.05
    for wins, losses in [(69, 47), (77, 51), (129, 9), (300, 260), (3, 17)]:
        n, k = wins + losses, min(wins, losses)
        reference = 2 * mpmath.betainc(n - k, k + 1, 0, 0.5, regularized=True)  # 2 P(X <= k), X ~ Bin(n, 1/2)
        assert sign_test(wins, losses) == pytest.approx(float(reference), rel=1e-12)


def test_compare_pairs_by_task_and_counts_wins_losses_ties() -> None:
    a = [result("t1", 0.5), result("t2", 1.0), result("t3", 0.2), result("only_a", 1.0)]
    b = [result("t1", 0.9), result("t2", 1.0), result("t3", 0.0), result("only_b", 0.0)]
    r = compare(a, b, label_a="base", label_b="sft")
    assert (r.key, r.n_pairs, r.wins, r.losses, r.ties, r.only_a, r.only_b) == ("task", 3, 1, 1, 1, 1, 1)
    assert r.p_value == 1.0 and r.mean_a == pytest.approx((0.5 + 1.0 + 0.2) / 3)
    assert [p.outcome for p in r.pairs] == ["win", "tie", "loss"]
    assert "1 wins, 1 losses, 1 ties" in r.sentence()
    assert compare(a, b, measure="pass_at_1").ties == 3  # on pass@1 every pair ties here


def test_compare_pairs_originals_with_scaled_descendants_by_root() -> None:
    originals = [result("r1", 1.0, root="r1"), result("r2", 1.0, root="r2"), result("r3", 0.5, root="r3")]
    scaled = [result("c1", 0.2, root="r1", depth=1), result("d1", 0.0, root="r1", depth=2),  # the deepest stands for r1
              result("c2", 1.0, root="r2", depth=1), result("c3", 0.7, root="r3", depth=1)]
    r = compare(originals, scaled)
    assert r.key == "root" and (r.wins, r.losses, r.ties) == (1, 1, 1)
    assert {p.key: p.b for p in r.pairs} == {"r1": 0.0, "r2": 1.0, "r3": 0.7}
    inside = original_vs_deepest(originals + scaled)
    assert inside is not None and (inside.wins, inside.losses, inside.ties) == (1, 1, 1)
    assert original_vs_deepest(originals) is None
