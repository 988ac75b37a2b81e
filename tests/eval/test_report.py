"""A written run: metrics.json, per-task jsonl, the markdown report and readable PNG plots."""

from __future__ import annotations

import asyncio
import json

from envtrain.agent.baselines import NoopPolicy, OraclePolicy
from envtrain.bench.envs import EnvsAdapter
from envtrain.eval.report import load_results, write_compare, write_run
from envtrain.eval.run import EvalConfig, evaluate
from tests.eval.lineage_kit import write_lineages

PNG = b"\x89PNG\r\n\x1a\n"


class Fading:
    """Solves originals, fails some depth-1 and every deeper environment: a stand-in for a model on scaled lineages."""

    name = "fading"

    def __init__(self) -> None:
        self.oracle, self.noop = OraclePolicy(), NoopPolicy()

    async def generate(self, messages, tools, params, ctx):
        depth = ctx.env.provenance.depth
        solve = depth == 0 or (depth == 1 and "helpdesk" in ctx.env.apps[0].name)
        return await (self.oracle if solve else self.noop).generate(messages, tools, params, ctx)

    async def aclose(self):
        return None


def _png_ok(path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG and len(data) > 10_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width >= 600 and height >= 300


def test_a_lineage_run_writes_metrics_results_report_and_plots(tmp_path) -> None:
    write_lineages(tmp_path / "envs", depth=2)
    adapter = EnvsAdapter(tmp_path / "envs")
    cfg = EvalConfig(benchmark="envs", policy="fading", out=tmp_path / "run", attempts=2)
    rows, trajectories = asyncio.run(evaluate(adapter, Fading(), cfg))
    metrics = write_run(tmp_path / "run", rows, trajectories, benchmark=adapter.name, policy="fading", fixture=False)
    out = tmp_path / "run"
    data = json.loads((out / "metrics.json").read_text())
    for key in ("n_tasks", "pass_at_1", "mean_score", "mean_turns", "mean_tool_calls"):
        assert key in data
    assert data["n_tasks"] == 9 and data["n_episodes"] == 18 and data["lineages"] == 3
    assert metrics.by_depth[0].current["pass_at_1"] == 1.0
    assert metrics.by_depth[2].current["pass_at_1"] == 0.0
    assert metrics.by_depth[1].current["pass_at_1"] == 1 / 3
    assert abs(metrics.by_depth[2].historical["pass_at_1"] - 4 / 9) < 1e-12  # ((1+1+0)/3 + 2 * (1+0+0)/3) / 3
    inside = data["original_vs_deepest"]
    assert (inside["wins"], inside["losses"], inside["ties"]) == (0, 3, 0)
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 9 and {r["attempts"] for r in results} == {2}
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 18
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 18
    report = (out / "report.md").read_text()
    assert "Original vs scaled" in report and "Eq. 4" in report and "![" in report
    for name in ("pass_and_score_by_depth", "tool_calls_by_depth", "by_group", "paired_original_vs_deepest"):
        _png_ok(out / "plots" / f"{name}.png")
        assert f"plots/{name}.png" in report


def test_compare_two_runs_writes_the_paired_report(tmp_path) -> None:
    write_lineages(tmp_path / "envs", depth=1)
    for name, folder, policy in (("orig", "originals", OraclePolicy()), ("scaled", "scaled", Fading())):
        adapter = EnvsAdapter(tmp_path / "envs" / folder)
        rows, _ = asyncio.run(evaluate(adapter, policy, EvalConfig(benchmark="envs", policy=policy.name, out=tmp_path / name)))
        write_run(tmp_path / name, rows, None, benchmark=adapter.name, policy=policy.name, fixture=policy.name == "oracle")
    result = write_compare(tmp_path / "cmp", tmp_path / "orig", tmp_path / "scaled")
    assert result.key == "root" and result.n_pairs == 3 and (result.wins, result.losses, result.ties) == (0, 2, 1)
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["p_value"] == 0.5
    assert "sign test p = 0.5" in (tmp_path / "cmp" / "compare.md").read_text()
    _png_ok(tmp_path / "cmp" / "paired_scatter.png")
    metrics, results = load_results(tmp_path / "orig")
    assert metrics.fixture and len(results) == 3
