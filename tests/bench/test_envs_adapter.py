"""Environment folders as a benchmark: the environment's verifier, lineage roots and depths."""

from __future__ import annotations

import asyncio
from pathlib import Path

from envtrain.agent.baselines import NoopPolicy
from envtrain.bench.envs import EnvsAdapter
from envtrain.eval.run import EvalConfig, evaluate
from tests.eval.lineage_kit import write_lineages

ROOT = Path(__file__).resolve().parents[2]


def test_examples_pass_with_the_oracle_and_fail_with_noop(tmp_path) -> None:
    adapter = EnvsAdapter(ROOT / "examples")
    cfg = EvalConfig(benchmark="envs:examples", policy="oracle", out=tmp_path)
    rows, trajectories = asyncio.run(evaluate(adapter, adapter.fixture_policy(), cfg, fixture=True))
    assert rows and all(r.passed and r.score == 1.0 and r.items_passed == r.items_total > 0 for r in rows)
    assert len(trajectories) == len(rows)
    rows, _ = asyncio.run(evaluate(adapter, NoopPolicy(), cfg))
    assert not any(r.passed for r in rows) and all(r.items_passed < r.items_total for r in rows)


def test_lineage_roots_and_depths_follow_provenance(tmp_path) -> None:
    originals, scaled = write_lineages(tmp_path, depth=2)
    tasks = EnvsAdapter(tmp_path).tasks()
    by_id = {t.id: t for t in tasks}
    for root_id, chain in scaled.items():
        for depth, env_id in enumerate(chain, 1):
            assert by_id[env_id].depth == depth and by_id[env_id].root == root_id
    assert all(by_id[o].root == o and by_id[o].depth == 0 for o in originals)
    # A scaled folder alone: the chain leaves the loaded set, so the root is the oldest ancestor it names.
    only_deep = EnvsAdapter(tmp_path / "scaled" / "d1").tasks()
    assert {t.root for t in only_deep} == set(scaled)


def test_files_that_do_not_load_are_reported_not_fatal(tmp_path) -> None:
    (tmp_path / "broken.json").write_text('{"apps": [], "request": 1}')
    originals, _ = write_lineages(tmp_path, depth=0)
    adapter = EnvsAdapter(tmp_path)
    assert len(adapter.tasks()) == len(originals)
    assert list(adapter.failed) == [str(tmp_path / "broken.json")]
