"""The teacher step (LegoEnv §3.5) runs any policy spec through the rollout engine and decides each
environment's band; unsolved ones are diagnosed. The oracle and noop policies are fixtures (they test
the pipeline, never a model); the tiny local HF model is a real policy whose yield is whatever it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envtrain.compose.evolve import RolloutTeacher, evolve_round
from envtrain.compose.pipeline import ComposeConfig, run
from envtrain.compose.teacher import TeacherSettings, band, check_spec
from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from tests.compose.conftest import TEST_DATASETS

N = 4


def compose(tmp_path: Path, card_cache: str, teacher: str, **kw) -> tuple[dict, list[dict]]:
    config = ComposeConfig(n=N, seed=0, out=tmp_path / "run", datasets=TEST_DATASETS, workers=1, cache_dir=Path(card_cache),
                           teacher=teacher, attempts=2, **kw)
    report = run(config)
    entries = [json.loads(line) for line in (config.out / "manifest.jsonl").read_text().splitlines()]
    return report, entries


def kept(out: Path) -> list[dict]:
    from datasets import load_from_disk

    return load_from_disk(str(out / "teacher")).select_columns(["env_id", "attempt", "policy", "passed"]).to_list()


def test_oracle_fixture_solves_every_admitted_environment(tmp_path: Path, card_cache: str) -> None:
    report, entries = compose(tmp_path, card_cache, "oracle")
    teacher = report["teacher"]
    assert (teacher["policy"], teacher["fixture"], teacher["environments"], teacher["yield"]) == ("oracle", True, N, 1.0)
    assert teacher["bands"] == {"unsolved": 0, "learnable": 0, "easy": N, "teacher error": 0}
    assert all(e["teacher"] == {"policy": "oracle", "attempts": 2, "passed": 2, "errors": 0, "band": "easy"} for e in entries)
    rows = kept(tmp_path / "run")  # the verifier-accepted trajectories, as an SFT dataset
    assert len(rows) == 2 * N and all(r["passed"] and r["policy"] == "oracle" for r in rows)

    report, entries = compose(tmp_path, card_cache, "oracle")  # a rerun resumes: nothing new to attempt
    assert report["teacher"]["yield"] == 1.0 and len(kept(tmp_path / "run")) == 2 * N


def test_noop_fixture_leaves_everything_unsolved_and_diagnosed_hard(tmp_path: Path, card_cache: str) -> None:
    report, entries = compose(tmp_path, card_cache, "noop")
    teacher = report["teacher"]
    assert (teacher["fixture"], teacher["yield"], teacher["bands"]["unsolved"], teacher["pathways"]) == (True, 0.0, N, {"keep hard": N})
    assert all(e["teacher"]["band"] == "unsolved" and e["teacher"]["diagnosis"]["pathway"] == "keep hard" for e in entries)
    # no diagnosis endpoint configured: the programmatic checks alone, and nothing asked of a model
    assert teacher["diagnosis"] == {"by_verdict": {"hard": N}, "by_pathway": {"keep hard": N}, "by_source": {"programmatic": N}}
    assert not any("diagnosis_llm" in e["teacher"] for e in entries)
    assert report["evolution"]["repairs_made"] == [] and not (tmp_path / "run" / "issues.json").exists()


def test_a_tiny_local_model_attempts_through_the_rollout_engine(tmp_path: Path, card_cache: str) -> None:
    from envtrain.agent.tiny import build_tiny_model

    spec = f"hf:{build_tiny_model(tmp_path / 'tiny')}"
    report, entries = compose(tmp_path, card_cache, spec, teacher_turns=2, teacher_max_tokens=24)
    teacher = report["teacher"]
    assert (teacher["policy"], teacher["fixture"], teacher["environments"]) == (spec, False, N)
    assert sum(teacher["bands"].values()) == N and teacher["bands"]["teacher error"] == 0
    for e in entries:
        assert e["teacher"]["policy"] == spec and e["teacher"]["attempts"] == 2
        assert e["teacher"]["band"] == band(e["teacher"]["passed"], 2)
    from envtrain.rollout.store import TrajectoryStore

    episodes = TrajectoryStore(tmp_path / "run" / "teacher").all()
    assert len(episodes) == 2 * N and set(episodes["policy"]) == {spec}
    assert all(n <= 2 for n in episodes["num_turns"])  # the teacher's limits reach the rollout engine


def test_the_teacher_interface_runs_a_policy_spec(pool, data) -> None:
    from envtrain.compose.builder import build
    from tests.compose.test_evolve import SK

    env = build(SK, pool, data, seed=4).env
    result = evolve_round([env], RolloutTeacher("oracle"), n=2)
    assert (result["teacher"], result["solved"], result["yield"]) == ("oracle", 1, 1.0)
    result = evolve_round([env], RolloutTeacher("noop", TeacherSettings(max_turns=1)), n=2)
    assert result["yield"] == 0.0 and result["pathways"] == {"keep hard": 1}
    assert isinstance(env, Environment)


def test_bands_and_specs() -> None:
    assert [band(k, 8) for k in (0, 1, 6, 7, 8)] == ["unsolved", "learnable", "learnable", "easy", "easy"]
    assert band(0, 0, errors=8) == "teacher error"
    assert check_spec(" openai:http://h:8000/v1 ") == "openai:http://h:8000/v1"
    for bad in ("gpt4", "hf:", "oracle:x"):
        with pytest.raises(SpecError, match="unknown teacher policy"):
            check_spec(bad)
