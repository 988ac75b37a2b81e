"""What the workspace quota, checker verifiers and generated-code calls cost, against baselines in the same run.

    python benchmarks/synth_sandbox.py            # about a minute on 2 cores
    python benchmarks/synth_sandbox.py --quick    # fewer repetitions

Rows (per available backend):
  command   p50 of one command in an open sandbox, workspace in a size-capped tmpfs (copied in and
            handed back as a tar), vs the same command with the host folder bound straight in
            (``Limits(disk_bytes=0)``, no quota)
  check     p50 of one checker-script verdict (a fresh sandbox + python3), vs one ``shell.run`` of
            ``true`` through the same family (sandbox + sh): the cost of the interpreter
  check*    the same verdict asked again (the family's cache), vs the uncached verdict
  call      p50 of one generated-code tool call (``shell.call``: sandbox + python3 + the harness
            + the generated module), vs the uncached checker verdict
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envtrain.sandbox import BACKENDS, Limits, open_sandbox, unavailable
from envtrain.sandbox.checker import CheckCache, run_check
from envtrain.sandbox.codecall import invoke
from timing import p50  # (benchmarks/, the script's own folder)

FILES = {f"data/part{i}.csv": "id,amount\n" + "".join(f"{j},{j * 7 % 100}\n" for j in range(200)) for i in range(10)}
CHECK = "import json, os\nprint(json.dumps({'pass': os.path.exists('data/part0.csv')}))\n"
TOOLS = "def total(ctx, args):\n    return {'n': sum(1 for _ in open('data/part0.csv'))}\n"


def measure(backend: str, n: int) -> list[tuple[str, str, float, str, float]]:
    rows = []
    with open_sandbox(backend, FILES, Limits()) as quota, open_sandbox(backend, FILES, Limits(disk_bytes=0)) as plain:
        capped = p50(lambda: quota.run("wc -l data/*.csv > out.txt"), n)
        straight = p50(lambda: plain.run("wc -l data/*.csv > out.txt"), n)
    rows.append((backend, "command", capped, "host folder, no quota", straight))
    with open_sandbox(backend, FILES, Limits()) as box:
        shell = p50(lambda: box.run("true"), n)
    verdict = p50(lambda: run_check(FILES, CHECK, backend), n)
    rows.append((backend, "check", verdict, "shell.run of true", shell))
    cache = CheckCache()
    cached = p50(lambda: cache.run(FILES, CHECK, backend, Limits()), n)
    rows.append((backend, "check*", cached, "uncached verdict", verdict))
    app = {**FILES, "app/tools.py": TOOLS}
    call = p50(lambda: invoke(app, "total", {}, base_time="2026-01-01T00:00:00Z", action_index=0,
                              now="2026-01-01T00:00:00Z", backend=backend), n)
    rows.append((backend, "call", call, "uncached verdict", verdict))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    n = 5 if parser.parse_args().quick else 20
    rows = []
    for backend in BACKENDS:
        why = unavailable(backend)
        if why is not None:
            print(f"{backend}: skipped ({why})")
            continue
        rows += measure(backend, n)
    print(f"\n{'backend':8} {'row':8} {'p50 ms':>9}  {'baseline':24} {'p50 ms':>9} {'ratio':>7}")
    for backend, row, value, name, base in rows:
        print(f"{backend:8} {row:8} {value:9.2f}  {name:24} {base:9.2f} {value / base:7.2f}")


if __name__ == "__main__":
    main()
