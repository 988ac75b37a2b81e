"""The compose benchmark keeps running (it prints a table; its timings are read there, never asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_compose_throughput_prints_its_table(card_cache: str) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compose_throughput.py"), "--quick", "--cache", card_cache,
                          "--sample", "20"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    stages = [line[:28].strip() for line in out.stdout.splitlines()[1:5]]
    assert stages == ["compose end to end", "per worker-second", "build + guard only", "admission only (baseline)"]
    assert "admission rate" in out.stdout and "10,000 admitted would take" in out.stdout
