"""Grading cost per episode: envtrain's verifier next to BFCL's own checker on the same episodes.

    python benchmarks/eval_grading.py            # all 800 BFCL multi-turn entries (about half a minute)
    python benchmarks/eval_grading.py --quick    # every 10th entry, for CI smoke
    python benchmarks/eval_grading.py --all      # also: admission and perturbation agreement on all 800

For each entry the gold calls are the episode. BFCL grades by re-running the model's calls and
the gold calls from the initial config on fresh instances and comparing states and results
(``multi_turn_checker``); envtrain grades the world the episode left with one SQL query
(``Session.verify`` on the entry's environment form, after replaying the same calls). Both are
timed per episode, p50 over repeats; the ratio is envtrain / BFCL. Target: envtrain under 1 ms
per grade (tau2-bench's grader rebuilds two environments and needs about 0.7 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import zlib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envtrain.bench.bfcl.data import CATEGORIES, call_text, load_entries
from envtrain.bench.bfcl.env import bfcl_environment, bfcl_handlers, method_parameters
from envtrain.bench.bfcl.executor import native_check
from envtrain.bench.bfcl.perturb import gold_turns, perturbations
from envtrain.core.admission import check_admission
from envtrain.core.session import Runtime
from timing import p50  # (benchmarks/, the script's own folder)


def grading(step: int, repeats: int) -> None:
    handlers = bfcl_handlers()
    print(f"{'category':<14}{'episodes':>9}{'BFCL checker ms':>17}{'envtrain verify ms':>20}{'ratio':>9}{'agree':>8}")
    all_bfcl, all_env = [], []
    for category in CATEGORIES:
        bfcl_ms, env_ms, agree, n = [], [], 0, 0
        for entry in load_entries(category)[::step]:
            runtime = Runtime(bfcl_environment(entry), handlers=handlers)
            decoded = [[turn] if turn else [] for turn in entry.ground_truth]
            native = native_check(entry, decoded).valid
            bfcl_ms.append(p50(lambda entry=entry, decoded=decoded: native_check(entry, decoded), repeats, warmup=0))
            with runtime.session() as s:
                s.reset()
                for turn in gold_turns(entry, method_parameters(entry.involved_classes)):
                    for c in turn:
                        s.step({"tool": c.name, "arguments": c.arguments})
                verdict = s.verify()
                env_ms.append(p50(s.verify, repeats, warmup=0))
            agree += native == verdict.passed
            n += 1
        all_bfcl += bfcl_ms
        all_env += env_ms
        b, e = statistics.median(bfcl_ms), statistics.median(env_ms)
        print(f"{category:<14}{n:>9}{b:>17.3f}{e:>20.4f}{e / b:>9.3f}{agree:>5}/{n}")
    b, e = statistics.median(all_bfcl), statistics.median(all_env)
    print(f"{'all':<14}{len(all_bfcl):>9}{b:>17.3f}{e:>20.4f}{e / b:>9.3f}")
    print(f"target: envtrain verify < 1 ms per grade -> {'met' if e < 1 else 'NOT met'} ({e:.4f} ms)")


def full_checks() -> None:
    """Admission of every environment form, and agreement with BFCL's checker on the gold and on perturbations."""
    handlers = bfcl_handlers()
    admitted, total, seconds = 0, 0, []
    outcomes: Counter = Counter()
    for category in CATEGORIES:
        for entry in load_entries(category):
            env = bfcl_environment(entry)
            report = check_admission(env, handlers=handlers)
            admitted += report.admitted
            total += 1
            seconds.append(report.seconds)
            runtime = Runtime(env, handlers=handlers)
            turns = gold_turns(entry, method_parameters(entry.involved_classes))
            for name, ts in [("gold", turns)] + list(perturbations(turns, seed=zlib.crc32(entry.id.encode()))):
                native = native_check(entry, [[[call_text(c.name, c.arguments) for c in t]] if t else [] for t in ts]).valid
                with runtime.session() as s:
                    s.reset()
                    for t in ts:
                        for c in t:
                            s.step({"tool": c.name, "arguments": c.arguments})
                    outcomes[(name, native == s.verify().passed)] += 1
    print(f"\nadmission: {admitted}/{total} environment forms admitted (p50 {1000 * statistics.median(seconds):.1f} ms each)")
    print(f"{'sequence':<28}{'agree':>8}{'disagree':>10}")
    for name in dict.fromkeys(n for n, _ in outcomes):
        print(f"{name:<28}{outcomes[(name, True)]:>8}{outcomes[(name, False)]:>10}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every 10th entry, fewer repeats")
    parser.add_argument("--all", action="store_true", help="also admission and agreement on all 800 entries")
    args = parser.parse_args()
    grading(step=10 if args.quick else 1, repeats=3 if args.quick else 7)
    if args.all:
        full_checks()
