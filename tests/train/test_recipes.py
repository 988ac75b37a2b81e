"""The recipe files run as users run them (the SFT recipe also runs in test_deepspeed.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.train.kit import CONFIGS, ROOT


def test_the_grpo_recipe_runs_its_tiny_config(tiny: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "recipes" / "grpo.py"), "--config", str(CONFIGS / "tiny" / "legoenv_grpo.yaml"),
         f"model={tiny}", f"output_dir={tmp_path}", "max_steps=1"],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "prompts: {'environments': 15" in out.stdout and "grpo step 1/1" in out.stdout
    assert (tmp_path / "model.safetensors").is_file()


def test_recipes_import_only_what_they_use_at_the_top() -> None:
    for name in ("sft.py", "grpo.py"):
        source = (ROOT / "recipes" / name).read_text()
        top = source.split("def main", 1)[0]
        assert "import torch" not in top and "from trl" not in top  # --help stays instant
