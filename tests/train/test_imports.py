"""The training modules import no torch, transformers, TRL, datasets, DeepSpeed or vLLM at module import."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ["torch", "vllm", "deepspeed", "transformers", "trl", "datasets"]


def test_train_modules_are_light_to_import() -> None:
    modules = ["envtrain.train", "envtrain.train.cli", "envtrain.train.config", "envtrain.train.sft", "envtrain.train.grpo",
               "envtrain.train.prompts", "envtrain.train.episodes", "envtrain.train.encode", "envtrain.train.hfargs",
               "envtrain.train.logs"]
    code = f"import sys, importlib; [importlib.import_module(m) for m in {modules!r}]; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
