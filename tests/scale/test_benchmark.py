"""The scaling benchmark keeps running and prints its rows (targets are read there, never asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_scale_throughput_benchmark_prints_its_table() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scale_throughput.py"), "--quick", "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["metric"])  # libraries may log above
    rows = [line.split()[0] for line in lines[start + 1:]]
    assert rows == ["lineages", "accept@3", "growth@3", "validate", "validate2"]
