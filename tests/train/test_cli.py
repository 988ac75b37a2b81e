"""`envtrain sft` / `envtrain grpo` as the lead registers them: a run with a summary, one sentence on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envtrain.train.cli import grpo_cmd, sft_cmd
from tests.train.kit import CONFIGS

TINY_SFT = str(CONFIGS / "tiny" / "res_sft.yaml")


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    app.command("sft")(sft_cmd)  # the two lines envtrain/cli.py adds
    app.command("grpo")(grpo_cmd)
    return app


def test_check_prints_the_resolved_config(app: typer.Typer) -> None:
    out = CliRunner().invoke(app, ["sft", "--config", TINY_SFT, "--check", "optim.lr=1e-4", "max_steps=7"])
    assert out.exit_code == 0, out.output
    cfg = json.loads(out.stdout)
    assert cfg["optim"]["lr"] == 1e-4 and cfg["max_steps"] == 7 and cfg["dataset"] == "runs/tiny/oracle"
    out = CliRunner().invoke(app, ["grpo", "--config", str(CONFIGS / "tiny" / "envcraft_rl.yaml"), "--check"])
    assert out.exit_code == 0 and json.loads(out.stdout)["reward"] == "score"


@pytest.mark.parametrize(("args", "sentence"), [
    (["sft", "--config", TINY_SFT, "optim.lrr=1"], f"error: {TINY_SFT}: unknown key 'optim.lrr'"),
    (["sft", "--config", "nowhere.yaml"], "error: nowhere.yaml: no such config file"),
    (["grpo", "--config", TINY_SFT], f"error: {TINY_SFT}: prompts is required"),
    (["sft", "--config", TINY_SFT, "deepspeed=zero9", "model=tiny:{tiny}"], "error: deepspeed 'zero9' is neither a JSON file nor one of the named configs"),
    (["sft", "--config", TINY_SFT, "dataset=/no/such/data", "model=tiny:{tiny}"], "error: dataset '/no/such/data' is not a saved dataset folder"),
])
def test_bad_input_exits_2_with_one_sentence(app: typer.Typer, tiny: Path, args: list[str], sentence: str) -> None:
    args = [a.replace("{tiny}", str(tiny)) for a in args]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(sentence), out.stderr


def test_sft_runs_end_to_end_and_prints_a_summary(app: typer.Typer, tiny: Path, ledger_data: Path, tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["sft", "--config", TINY_SFT, f"model={tiny}", f"dataset={ledger_data}",
                                   f"output_dir={tmp_path}", "max_steps=2", "logging_steps=1"])
    assert out.exit_code == 0, out.output
    assert "sft data: 4 records, 4 kept" in out.stdout and "sft step 2/2" in out.stdout
    assert "records kept / total" in out.stdout and "4 / 4" in out.stdout
    assert (tmp_path / "model.safetensors").is_file() and (tmp_path / "metrics.jsonl").is_file()
    assert (tmp_path / "checkpoint-2").is_dir()  # save_steps 2 in the tiny config
