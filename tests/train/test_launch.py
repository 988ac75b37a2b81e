"""The launchers parse (bash -n, and shellcheck where installed) and refuse to start without a command."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.train.kit import ROOT

SCRIPTS = sorted(p for p in (ROOT / "launch").iterdir() if p.suffix in (".sh", ".sbatch"))


def test_there_is_a_launcher_for_each_way_to_run() -> None:
    assert {p.name for p in SCRIPTS} >= {"torchrun_single.sh", "torchrun_multi.sh", "slurm.sbatch", "vllm_server.sh"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_launcher_parses(script: Path) -> None:
    out = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    first = script.read_text().splitlines()
    assert first[0] == "#!/usr/bin/env bash" and first[1].startswith("# ")  # the second line: how to run it
    if shutil.which("shellcheck"):
        check = subprocess.run(["shellcheck", "-S", "warning", str(script)], capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stdout


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_launcher_without_a_command_prints_its_usage(script: Path) -> None:
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=False)
    assert out.returncode == 2 and "usage:" in out.stderr
