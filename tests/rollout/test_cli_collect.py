"""`envtrain collect` as a user runs it: the oracle, a real local OpenAI-compatible server, bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from datasets import load_from_disk

from envtrain.rollout.trajectory import STOP_REASONS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def envtrain(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envtrain.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_collect_with_the_oracle(tmp_path) -> None:
    out = envtrain("collect", "--envs", str(EXAMPLES), "--policy", "oracle", "--attempts", "2", "--keep-per-env", "1", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "oracle fixture" in out.stdout  # never mistaken for a model's result
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["pass_at_1"] == 1.0 and summary["attempts"] == 2 * len(list(EXAMPLES.glob("*.yaml")))
    assert len(load_from_disk(str(tmp_path))) == len(list(EXAMPLES.glob("*.yaml")))


def test_collect_over_http_from_a_real_local_server(tmp_path) -> None:
    from envtrain.agent.hf import HFPolicy
    from envtrain.agent.server import serve
    from envtrain.agent.tiny import build_tiny_model

    envs = tmp_path / "envs"
    envs.mkdir()
    shutil.copy(EXAMPLES / "helpdesk_escalation.yaml", envs)
    model = build_tiny_model(tmp_path / "tiny")
    with serve(HFPolicy(str(model))) as server:
        out = envtrain("collect", "--envs", str(envs), "--policy", f"openai:{server.url}", "--attempts", "2",
                       "--max-turns", "2", "--max-tokens", "16", "--out", str(tmp_path / "out"))
        assert server.completions >= 2
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["attempts"] == 2 and summary["completion_tokens"] > 0
    assert set(summary["stop_reasons"]) <= set(STOP_REASONS) - {"error"}, summary["stop_reasons"]


def test_an_unreachable_endpoint_is_recorded_not_fatal(tmp_path) -> None:
    out = envtrain("collect", "--envs", str(EXAMPLES / "helpdesk_escalation.yaml"), "--policy", "openai:http://127.0.0.1:9/v1",
                   "--retries", "0", "--request-timeout", "2", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["stop_reasons"] == {"error": 1} and summary["pass_at_1"] == 0.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "gpt:4"], "unknown policy 'gpt:4'"),
        (["--policy", "oracle", "--shard", "3/2"], "--shard takes I/N"),
        (["--policy", "oracle", "--envs", "/nonexistent"], "no such file or folder"),
    ],
)
def test_bad_input_is_one_clear_sentence(tmp_path, args, message) -> None:
    base = {"--envs": str(EXAMPLES), "--out": str(tmp_path)}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    out = envtrain("collect", *[x for kv in base.items() for x in kv])
    assert out.returncode == 2 and message in out.stderr
