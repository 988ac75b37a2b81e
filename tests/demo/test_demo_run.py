"""``envtrain demo`` end to end at the smallest size: every stage runs for real (compose, RES, split,
oracle-teacher collect, tiny-model SFT and GRPO, eval on held-out lineages and BFCL, report), and a
rerun resumes instead of redoing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SMALL = [
    "compose.n=16", "compose.workers=1", "scale.roots_train=1", "scale.roots_heldout=1", "scale.depth=1", "scale.workers=1",
    "model.tiny_vocab=1024", "sft.max_steps=2", "sft.checkpoint.save_steps=100", "grpo.max_steps=1", "grpo.group_size=2",
    "grpo.per_device_batch_size=2", "grpo.global_batch_size=2", "grpo.max_turns=1", "grpo.max_turn_tokens=8",
    "grpo.max_completion_tokens=64", "eval.bfcl_per_category=1", "eval.max_turns=1", "eval.max_tokens=8",
]


def _demo(out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "envtrain.cli", "demo", "--out", str(out), *SMALL, *extra],
                          capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("demo") / "out"
    done = _demo(out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done


def test_every_stage_ran_and_the_report_has_its_plots(run) -> None:
    out, done = run
    for stage in ("compose", "scale", "split", "collect", "model", "sft", "grpo", "eval"):
        assert (out / "stages" / f"{stage}.json").is_file(), stage
    report = (out / "report.md").read_text(encoding="utf-8")
    for plot in ("checkpoints", "heldout_by_depth", "reference_path", "grpo_reward", "sft_loss"):
        assert (out / "plots" / f"{plot}.png").stat().st_size > 1000
        assert f"plots/{plot}.png" in report
    assert "oracle (fixture" in report and "oracle (fixture" in done.stdout  # the teacher is labelled where numbers are
    assert (out / "configs" / "sft.yaml").is_file() and (out / "configs" / "grpo.yaml").is_file()


def test_the_split_holds_out_whole_families_and_lineages(run) -> None:
    out, _ = run
    manifest = [json.loads(line) for line in (out / "compose" / "manifest.jsonl").read_text().splitlines()]
    family = {e["id"]: e["family"] for e in manifest if e["status"] == "admitted"}
    record = json.loads((out / "split" / "split.json").read_text())
    train_roots = {p.stem for p in (out / "split" / "train" / "original").glob("*.json")}
    train_roots |= {p.name for p in (out / "split" / "train").glob("lineages/*")}
    held_roots = {p.stem for p in (out / "split" / "heldout").glob("original/*.json")}
    held_roots |= {p.name for p in (out / "split" / "heldout").glob("lineages/*")}
    assert train_roots and held_roots and not train_roots & held_roots
    assert not {family[r] for r in train_roots} & {family[r] for r in held_roots}
    assert set(record["heldout_family_ids"]) == {family[r] for r in held_roots}
    assert len(record["train"]) + len(record["heldout"]) == len(family) + record["train_scaled"] + record["heldout_scaled"]


def test_printed_numbers_are_the_eval_runs_numbers(run) -> None:
    out, done = run
    for checkpoint in ("base", "sft", "grpo"):
        held = json.loads((out / "eval" / checkpoint / "heldout" / "metrics.json").read_text())
        bfcl = json.loads((out / "eval" / checkpoint / "bfcl" / "metrics.json").read_text())
        original = next(r for r in held["by_depth"] if r["depth"] == 0)["mean"]
        row = next(line for line in done.stdout.splitlines() if re.match(rf"\W*{checkpoint}\b", line.strip("│ ")))
        assert f"{100 * original['pass_at_1']:.1f}% / {original['mean_score']:.3f}" in row
        assert f"{100 * bfcl['pass_at_1']:.1f}% / {bfcl['mean_score']:.3f}" in row
        assert held["fixture"] is False and bfcl["n_tasks"] == 1


def test_a_rerun_resumes_and_another_config_is_refused(run) -> None:
    out, _ = run
    before = (out / "report.md").read_text(encoding="utf-8")
    again = _demo(out)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stderr.count("done in an earlier run") == 8
    assert (out / "report.md").read_text(encoding="utf-8") == before
    other = _demo(out, "seed=1")
    assert other.returncode == 2 and "another config" in other.stderr
