"""`import envtrain` (and its core and CLI) pulls in no GPU, service or training dependency."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ["torch", "vllm", "deepspeed", "docker", "transformers", "trl", "datasets"]


def test_import_is_light() -> None:
    code = (
        "import sys, envtrain, envtrain.core, envtrain.core.admission, envtrain.cli, envtrain.apps.handlers; "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
