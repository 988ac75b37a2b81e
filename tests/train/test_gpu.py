"""GPU-only checks (marker ``gpu``): bf16 training, vLLM generation in GRPO, two-rank ZeRO-3. They skip cleanly
without a CUDA GPU (and without vLLM, or with fewer than two GPUs, where they need those)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envtrain.train.logs import read_metrics
from tests.train.kit import CONFIGS, HELPDESK, ROOT, sft_config


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


# Decided at collection, so no fixture (the warmed model takes a minute to build) is made for a test that skips.
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_gpus() == 0, reason="needs a CUDA GPU")]


def _losses(out: Path) -> list[float]:
    return [r["loss"] for r in read_metrics(out) if r.get("loss") is not None]


def test_bf16_sft_steps_train(tiny: Path, ledger_data: Path, tmp_path: Path) -> None:
    from envtrain.train.sft import run_sft

    summary = run_sft(sft_config(tiny, ledger_data, tmp_path, "precision=bf16", "max_steps=4", "logging_steps=1",
                                 "optim.warmup_ratio=0"), printer=lambda line: None)
    losses = _losses(tmp_path)
    assert summary.steps == 4 and all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]


def test_grpo_generates_with_vllm_colocated(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    warm: Path = request.getfixturevalue("warm")  # built only once the skips have passed
    from envtrain.train.config import load_config
    from envtrain.train.grpo import GRPORunConfig, run_grpo

    envs = tmp_path / "envs"
    envs.mkdir()
    shutil.copy(HELPDESK, envs)
    os.environ.setdefault("RANK", "0")  # colocated vLLM joins the (single-rank) torch.distributed group
    cfg = load_config(GRPORunConfig, CONFIGS / "tiny" / "envcraft_rl.yaml", [
        f"model={warm}", f"prompts.envs={envs}", f"output_dir={tmp_path / 'out'}", "group_size=4", "per_device_batch_size=4",
        "global_batch_size=4", "max_turns=2", "max_turn_tokens=100", "max_completion_tokens=600", "max_steps=1",
        "precision=bf16", "vllm.mode=colocate", "vllm.gpu_memory_utilization=0.2", "vllm.max_model_length=4096"])
    summary = run_grpo(cfg, printer=lambda line: None)
    [step] = [r for r in read_metrics(tmp_path / "out") if r.get("reward") is not None]
    assert summary.steps == 1 and step["env/model_tokens"] > 0 and 0.0 <= step["reward"] <= 1.0


def test_two_rank_zero3_matches_one_rank(tiny: Path, ledger_data: Path, tmp_path: Path) -> None:
    if _gpus() < 2:
        pytest.skip("needs two CUDA GPUs")
    common = [f"model={tiny}", f"dataset={ledger_data}", "max_steps=3", "logging_steps=1", "global_batch_size=2",
              "optim.warmup_ratio=0", "checkpoint.save_steps=1000", "deepspeed=zero3"]
    runs = {}
    for ranks in (1, 2):
        out = tmp_path / f"ranks{ranks}"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(ranks), str(ROOT / "recipes" / "sft.py"),
               "--config", str(CONFIGS / "tiny" / "res_sft.yaml"), *common, f"output_dir={out}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[ranks] = _losses(out)
    # Same global batch (1 x 2 ranks vs 1 x 2 accumulation steps), same data order: the curves agree up to the
    # all-reduce's summation order.
    for a, b in zip(runs[1], runs[2]):
        assert math.isclose(a, b, rel_tol=1e-4), runs
