"""Compose throughput: environments per second and the admission rate for N environments.

    python benchmarks/compose_throughput.py --n 2000            # a table like the one in the report
    python benchmarks/compose_throughput.py --n 10000           # the issue's target: 10,000 admitted in < 10 min
    python benchmarks/compose_throughput.py --quick             # 100 environments over 8 tables: a smoke run for CI

The baseline, measured in the same run on the same environments, is admission alone: every written
environment is loaded and checked again in one process. The ratios show where the time goes
(build + guard vs. admission vs. process start-up and writing).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envtrain.core.admission import check_admission  # noqa: E402
from envtrain.core.env import Environment  # noqa: E402
from envtrain.compose.pipeline import ComposeConfig, Composer, run  # noqa: E402
from envtrain.compose.builder import build  # noqa: E402
from envtrain.compose.context import Unbuildable  # noqa: E402
from envtrain.compose.guard import unstated_values  # noqa: E402


QUICK_DATASETS = ("survival/cgd", "mosaicData/Marriage", "Ecdat/Wages", "MASS/Cars93", "datasets/warpbreaks",
                  "mosaicData/Births78", "datasets/iris", "datasets/mtcars")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cache", type=Path, default=None, help="data-card cache (default: ~/.cache/envtrain)")
    parser.add_argument("--sample", type=int, default=500, help="environments re-timed one by one for the baselines")
    parser.add_argument("--quick", action="store_true", help="100 environments over 8 tables (a smoke run, not a measurement)")
    args = parser.parse_args()
    n = 100 if args.quick else args.n
    cache = args.cache or Path(os.environ.get("ENVTRAIN_CACHE", Path.home() / ".cache" / "envtrain"))

    with tempfile.TemporaryDirectory() as tmp:
        config = ComposeConfig(n=n, seed=args.seed, out=Path(tmp) / "run", workers=args.workers, cache_dir=cache,
                               datasets=QUICK_DATASETS if args.quick else None)
        Composer(config)  # warm the card cache, so a first scan is not counted as composing
        start = time.perf_counter()
        report = run(config)
        total = time.perf_counter() - start
        files = sorted((config.out / "envs").glob("*.json"))[: args.sample]

        # baseline 1: admission alone, one process, on the written environments
        envs = [Environment.load(f) for f in files]
        t = time.perf_counter()
        for env in envs:
            check_admission(env)
        admission = (time.perf_counter() - t) / max(1, len(envs))

        # baseline 2: build + guard alone, one process, on the same indices
        composer = Composer(config)
        t, built = time.perf_counter(), 0
        for index in range(min(n, args.sample)):
            sk, seed = composer.plan(index)
            try:
                b = build(sk, composer.pool, composer.data, seed)
            except Unbuildable:
                continue
            unstated_values(b.env, b.stated)
            built += 1
        building = (time.perf_counter() - t) / max(1, built)

    admitted = report["admitted"]
    per_env = total / n
    rows = [
        ("compose end to end", f"{args.workers} workers", total, per_env * 1000, n / total, 1.0),
        ("  per worker-second", "", total * args.workers, per_env * args.workers * 1000, n / (total * args.workers), args.workers),
        ("build + guard only", "1 process", building * n, building * 1000, 1 / building, building / per_env),
        ("admission only (baseline)", "1 process", admission * n, admission * 1000, 1 / admission, admission / per_env),
    ]
    print(f"{'stage':28s} {'how':12s} {'seconds':>9s} {'ms/env':>8s} {'env/s':>8s} {'ratio':>7s}")
    for name, how, seconds, ms, rate, ratio in rows:
        print(f"{name:28s} {how:12s} {seconds:9.1f} {ms:8.2f} {rate:8.1f} {ratio:7.2f}")
    print()
    print(f"environments: {n}  admitted: {admitted}  admission rate: {admitted / n:.1%}"
          f"  admitted/s: {admitted / total:.1f}  apps: {len(report['counts']['apps'])}"
          f"  archetypes: {len(report['counts']['archetypes'])}  datasets: {report['counts']['datasets']}")
    print(f"10,000 admitted would take about {10_000 / max(admitted / total, 1e-9) / 60:.1f} min at this rate (target: < 10 min)")
    print("ratio: the stage's time per environment over compose's wall time per environment"
          " (build + admission ratios summing above 1 is the parallel speed-up)")


if __name__ == "__main__":
    main()
