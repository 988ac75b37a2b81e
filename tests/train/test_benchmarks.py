"""The training benchmarks keep running (they print tables; their targets are read there, never asserted here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.train.kit import ROOT


@pytest.mark.parametrize(("script", "rows"), [
    ("train_sft_throughput.py", ["envtrain sft", "TRL SFTTrainer", "ratio envtrain/TRL, tokens per wall second"]),
    ("train_grpo_step.py", ["envtrain grpo", "TRL tools="]),
])
def test_training_benchmark_prints_its_table(script: str, rows: list[str]) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--quick"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    for row in rows:
        assert any(line.startswith(row) for line in lines), out.stdout
