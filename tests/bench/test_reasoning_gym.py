"""reasoning-gym: gold answers score 1.0, wrong ones less; levels come from curricula; answers by tool or text."""

from __future__ import annotations

import asyncio

import pytest

from envtrain.agent.baselines import NoopPolicy
from envtrain.agent.types import SamplingParams
from envtrain.bench.reasoning_gym import ReasoningGymAdapter, parse_levels
from envtrain.bench.registry import make_adapter
from envtrain.bench.types import EpisodeLimits
from tests.bench.bfcl_kit import Script, calls, text

# Spread over families: arithmetic, strings, logic, graphs, games, algebra.
DATASETS = ["leg_counting", "basic_arithmetic", "word_sorting", "spell_backward", "knights_knaves", "shortest_path",
            "mini_sudoku", "simple_equations", "family_relationships", "number_sorting"]


def run(adapter, task, policy, limits=EpisodeLimits()):
    episode = asyncio.run(adapter.episode(task, policy, SamplingParams(), limits, 0))
    return episode, adapter.grade(episode)


@pytest.mark.parametrize("name", DATASETS)
def test_gold_answers_score_one_and_a_wrong_answer_less(name) -> None:
    adapter = ReasoningGymAdapter(name, size=3, seed=1)
    gold = adapter.fixture_policy()
    for task in adapter.tasks():
        _, grade = run(adapter, task, gold)
        assert grade.passed and grade.score == 1.0, (task.id, grade.detail)
        _, wrong = run(adapter, task, Script([calls(("answer", {"answer": "certainly not this"}))]))
        assert not wrong.passed and wrong.score < 1.0


def test_levels_come_from_the_curriculum_and_become_depths() -> None:
    adapter = make_adapter("reasoning-gym:leg_counting:0-2", limit=4, seed=3)
    tasks = adapter.tasks()
    assert [t.depth for t in tasks] == [0] * 4 + [1] * 4 + [2] * 4
    assert len({t.id for t in tasks}) == 12 and tasks[5].id == "leg_counting:L1:1"
    assert adapter.name == "reasoning-gym:leg_counting:0,1,2"
    # level 0 asks about one kind of animal, level 2 about up to three
    assert {adapter.entry(t)["metadata"]["num_animals"] for t in tasks[:4]} == {1}
    assert max(adapter.entry(t)["metadata"]["num_animals"] for t in tasks[8:]) <= 3
    assert parse_levels("0-2,5") == [0, 1, 2, 5] and parse_levels("3") == [3]
    with pytest.raises(ValueError, match="levels"):
        parse_levels("x")


def test_a_composite_of_datasets_runs_as_one_benchmark_with_a_group_each() -> None:
    adapter = make_adapter("reasoning-gym:chain_sum,leg_counting:0-1", limit=2, seed=5)
    tasks = adapter.tasks()
    assert adapter.name == "reasoning-gym:chain_sum,leg_counting:0,1"
    assert [(t.group, t.depth) for t in tasks] == [(g, d) for g in ("chain_sum", "leg_counting") for d in (0, 1) for _ in range(2)]
    assert len({t.id for t in tasks}) == 8
    gold = adapter.fixture_policy()
    for task in tasks:  # each task is graded by its own dataset's scorer
        assert run(adapter, task, gold)[1].passed
        assert "num_animals" in adapter.entry(task)["metadata"] or task.group == "chain_sum"
    single = make_adapter("reasoning-gym:leg_counting:0-1", limit=2, seed=5).tasks()
    assert [t.question for t in tasks[4:]] == [t.question for t in single]  # a composite changes no dataset's questions


def test_a_text_answer_counts_and_the_tool_ends_the_episode() -> None:
    adapter = ReasoningGymAdapter("basic_arithmetic", size=1, seed=0)
    task = adapter.tasks()[0]
    _, grade = run(adapter, task, Script([text(f"Let me think.\n<answer>{task.answer}</answer>")]))
    assert grade.passed
    _, grade = run(adapter, task, Script([text(f"{task.answer}")]))
    assert grade.passed
    episode, grade = run(adapter, task, Script([calls(("answer", {"answer": task.answer})), text("should not be asked")]))
    assert grade.passed and episode.trajectory.num_turns == 1
    episode, grade = run(adapter, task, Script([calls(("answer", {"wrong": 1})), calls(("answer", {"answer": task.answer}))]))
    assert grade.passed and episode.trajectory.num_tool_errors == 1
    _, grade = run(adapter, task, NoopPolicy())
    assert not grade.passed


def test_bad_names_are_one_sentence() -> None:
    with pytest.raises(ValueError, match="no dataset"):
        make_adapter("reasoning-gym:not_a_dataset")
    with pytest.raises(ValueError, match="no dataset 'nope'"):
        make_adapter("reasoning-gym:chain_sum,nope")
    with pytest.raises(ValueError, match="distinct names"):
        make_adapter("reasoning-gym:chain_sum,chain_sum")
    with pytest.raises(ValueError, match="unknown benchmark"):
        make_adapter("gsm8k")
