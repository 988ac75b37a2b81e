"""``envtrain eval`` (and ``bench-export``) end to end on small samples, through a Typer app that
registers the commands as envtrain.cli will; bad input exits 2 with one sentence."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from envtrain.bench.cli import export_cmd
from envtrain.eval.cli import eval_cmd
from tests.eval.lineage_kit import write_lineages

app = typer.Typer()
app.command("eval")(eval_cmd)
app.command("bench-export")(export_cmd)
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_bfcl_oracle_and_noop_on_a_sample(tmp_path) -> None:
    r = invoke("eval", "--policy", "oracle", "--benchmark", "bfcl-multi-turn", "--limit", "3", "--out", str(tmp_path / "gold"))
    assert r.exit_code == 0, r.output
    assert "fixture" in r.output and "12/12" in r.output
    metrics = json.loads((tmp_path / "gold" / "metrics.json").read_text())
    assert (metrics["n_tasks"], metrics["pass_at_1"], metrics["fixture"]) == (12, 1.0, True)
    assert set(metrics["by_group"]) == {"base", "miss_func", "miss_param", "long_context"}
    assert (tmp_path / "gold" / "plots" / "by_group.png").exists()
    r = invoke("eval", "--policy", "noop", "--benchmark", "bfcl-multi-turn:base", "--limit", "3", "--out", str(tmp_path / "noop"),
               "--no-trajectories")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "noop" / "metrics.json").read_text())["pass_at_1"] == 0.0
    assert not (tmp_path / "noop" / "trajectories.jsonl").exists()
    r = invoke("eval", "--compare", str(tmp_path / "gold"), str(tmp_path / "noop"), "--out", str(tmp_path / "cmp"))
    assert r.exit_code == 0, r.output
    assert "0 wins, 3 losses, 0 ties" in r.output and (tmp_path / "cmp" / "paired_scatter.png").exists()


def test_reasoning_gym_levels_and_attempts(tmp_path) -> None:
    r = invoke("eval", "--policy", "oracle", "--benchmark", "reasoning-gym:chain_sum:0-1", "--limit", "3", "--attempts", "2",
               "--out", str(tmp_path))
    assert r.exit_code == 0, r.output
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["n_tasks"] == 6 and metrics["n_episodes"] == 12 and metrics["pass_at_k"] == {"1": 1.0, "2": 1.0}
    assert [d["depth"] for d in metrics["by_depth"]] == [0, 1]
    assert (tmp_path / "plots" / "pass_and_score_by_depth.png").exists()


def test_original_and_scaled_folders_give_a_paired_report(tmp_path) -> None:
    write_lineages(tmp_path / "envs", depth=2)
    r = invoke("eval", "--policy", "oracle", "--benchmark", f"envs:{tmp_path / 'envs'}", "--out", str(tmp_path / "all"))
    assert r.exit_code == 0, r.output
    report = (tmp_path / "all" / "report.md").read_text()
    assert "3 lineages" in report and "Original vs scaled" in report
    for name in ("originals", "scaled"):
        r = invoke("eval", "--policy", "noop" if name == "scaled" else "oracle", "--benchmark", f"envs:{tmp_path / 'envs' / name}",
                   "--out", str(tmp_path / name))
        assert r.exit_code == 0, r.output
    r = invoke("eval", "--compare", str(tmp_path / "originals"), str(tmp_path / "scaled"), "--out", str(tmp_path / "cmp"))
    assert r.exit_code == 0, r.output
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert (result["key"], result["n_pairs"], result["losses"]) == ("root", 3, 3)


def test_bench_export_writes_admitted_environments_that_evaluate(tmp_path) -> None:
    r = invoke("bench-export", "bfcl-multi-turn:base,long_context", "--limit", "2", "--check", "--out", str(tmp_path / "envs"))
    assert r.exit_code == 0, r.output
    assert "4/4" in r.output and len(list((tmp_path / "envs").glob("*.json"))) == 4
    r = invoke("eval", "--policy", "oracle", "--benchmark", f"envs:{tmp_path / 'envs'}", "--out", str(tmp_path / "run"))
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["pass_at_1"] == 1.0


@pytest.mark.parametrize("args, sentence", [
    (["--policy", "oracle", "--benchmark", "gsm8k"], "unknown benchmark 'gsm8k'"),
    (["--policy", "gpt", "--benchmark", "bfcl-multi-turn"], "unknown policy 'gpt'"),
    (["--policy", "oracle", "--benchmark", "bfcl-multi-turn:hard"], "unknown BFCL multi-turn category 'hard'"),
    (["--policy", "oracle", "--benchmark", "reasoning-gym:nope"], "reasoning-gym has no dataset 'nope'"),
    (["--policy", "oracle", "--benchmark", "envs:/no/such/folder"], "no such file or folder"),
    (["--benchmark", "bfcl-multi-turn"], "give --policy and --benchmark"),
    (["--compare", "/no/a", "/no/b"], "not an evaluation run"),
])
def test_bad_input_is_one_sentence_and_exit_2(tmp_path, args, sentence) -> None:
    r = runner.invoke(app, ["eval", *args, "--out", str(tmp_path)])
    assert r.exit_code == 2
    assert sentence in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_importing_the_commands_is_light() -> None:
    code = ("import sys, envtrain.eval.cli, envtrain.bench.cli, envtrain.bench.registry, envtrain.eval.report; "
            "print([m for m in ['torch', 'transformers', 'datasets', 'matplotlib', 'bfcl_eval', 'reasoning_gym', 'vllm'] if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_real_model_policy_runs_end_to_end(tmp_path) -> None:
    """The tiny local Qwen3 (random weights: it fails, but every episode runs, counts tokens and is graded)."""
    from envtrain.agent.tiny import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    r = invoke("eval", "--policy", f"hf:{model}", "--benchmark", "reasoning-gym:basic_arithmetic", "--limit", "2",
               "--max-tokens", "12", "--out", str(tmp_path / "run"))
    assert r.exit_code == 0, r.output
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["n_episodes"] == 2 and not metrics["fixture"]
    assert metrics["mean_prompt_tokens"] > 0 and metrics["mean_completion_tokens"] > 0
    assert sum(metrics["stop_reasons"].values()) == 2
