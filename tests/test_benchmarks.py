"""The benchmarks keep running (they print tables; timing targets are read there, never asserted here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_core_latency_benchmark_prints_its_table() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "core_latency.py"), "--quick"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("metric"))  # libraries may log above the table
    rows = [line.split()[0] for line in lines[start + 1:]]
    assert rows == ["step", "reset", "verify", "admission"]
    assert "BFCL executor per call" in out.stdout
