"""Recursive environment scaling throughput, against baselines measured in the same run.

    python benchmarks/scale_throughput.py                 # 105 lineages to depth 10, 2 workers
    python benchmarks/scale_throughput.py --quick         # 6 lineages to depth 3 (CI smoke)

Rows:
  lineages   wall seconds to scale N lineages to depth D with the programmatic proposer
             (propose with lookahead, apply, validate with every check, repair), children per
             second; baseline: the admission check alone of every accepted child, run serially
             afterwards in this process (ratio = scaling wall time / admission-only time).
             Target: 105 lineages to depth 10 in under 300 s.
  accept@5   share of lineages that reach depth 5 (target >= 0.80)
  growth@5   mean reference path length at depth 5 over depth 0 (target >= 4)
  validate   p50 milliseconds to validate one child of a 1,000-row world (all eight checks),
             against the same validation with nothing shared between its checks
             (``validate(share=False)``: the parent's world built, the rebuilt candidate compiled
             and traversed, the records read again), run interleaved in this process; the note
             gives the admission check alone with the compile of the child, the floor every
             validation pays (target: < 100 ms)
  validate2  the same for a depth-2 child of that world (its plan transforms inherited views)
The roots are the shipped examples, each copied with a numbered request so ids differ.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envtrain.core import Environment  # noqa: E402
from envtrain.core.admission import check_admission  # noqa: E402
from envtrain.scale.apply import apply_plan  # noqa: E402
from envtrain.scale.lineage import ScaleConfig, scale_all  # noqa: E402
from envtrain.scale.plan import Plan  # noqa: E402
from envtrain.scale.validate import validate  # noqa: E402
from timing import interleaved, p50  # noqa: E402  (benchmarks/, the script's own folder)


def make_roots(n: int, out: Path) -> list[Path]:
    examples = [Environment.load(p) for p in sorted((ROOT / "examples").glob("*.yaml"))]
    paths = []
    for i in range(n):
        base = examples[i % len(examples)]
        data = base.model_dump(mode="json", exclude={"id"})
        data["request"] = f"{base.request} (case {i})"
        path = out / f"{i:04d}.json"
        Environment.parse(data).save(path)
        paths.append(path)
    return paths


def thousand_row_world() -> Environment:
    priorities = ["low", "normal", "high", "urgent"]
    tickets = [
        {
            "id": i,
            "subject": f"Ticket {i}: {'invoice charge' if i % 7 == 0 else 'question'}",
            "body": f"Body of ticket {i}.",
            "customer": f"c{i}@acme.test",
            "priority": priorities[i % 4],
            "status": "open" if i % 3 else "pending",
            "created_at": "2026-03-01T10:00:00Z",
            "updated_at": "2026-03-01T10:00:00Z",
            "tags": [],
        }
        for i in range(1, 1001)
    ]
    return Environment.parse(
        {
            "apps": ["helpdesk"],
            "request": "Escalate ticket 7 (an urgent invoice charge) to billing.",
            "persona": {"email": "dana@support.example"},
            "world": {
                "base_time": "2026-03-02T09:00:00Z",
                "tables": {
                    "helpdesk.agents": [{"email": "dana@support.example", "name": "Dana", "team": "tier1"}],
                    "helpdesk.tickets": tickets,
                },
            },
            "verifier": {
                "positive": [
                    {
                        "name": "7 escalated",
                        "entity": "helpdesk.tickets",
                        "where": ["id = 7", "status = 'escalated'", "escalated_to = 'billing'"],
                        "count": "= 1",
                    }
                ],
                "negative": [
                    {"name": "8 untouched", "entity": "helpdesk.tickets", "where": ["id = 8", "status = 'open'"], "count": "= 1"}
                ],
            },
            "reference_solution": [
                {"tool": "list_tickets", "arguments": {"priority": "urgent"}},
                {"tool": "escalate_ticket", "arguments": {"ticket_id": 7, "team": "billing", "reason": "invoice"}},
            ],
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lineages", type=int, default=105)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.lineages, args.depth = 6, 3
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "roots").mkdir()
        roots = make_roots(args.lineages, Path(tmp) / "roots")
        out = Path(tmp) / "out"
        start = time.perf_counter()
        report = scale_all(roots, out, ScaleConfig(depth=args.depth), workers=args.workers)
        wall = time.perf_counter() - start
        children = sorted(
            p
            for p in (out / "lineages").rglob("*.json")
            if p.name.split(".")[0].isdigit() and p.name.count(".") == 1 and p.name != "0.json"
        )
        admit = 0.0
        for path in children:
            env = Environment.load(path)
            t = time.perf_counter()
            check_admission(env)
            admit += time.perf_counter() - t
    n = report["children"]
    rows.append(
        (
            "lineages",
            f"{wall:.1f} s",
            f"admission alone: {admit:.1f} s",
            f"{wall / admit:.1f}" if admit else "-",
            f"{args.lineages} to depth {args.depth} ({n} children, {n / wall:.1f}/s, {args.workers} workers); "
            "target 105x10 < 300 s",
        )
    )
    d5 = min(5, args.depth)
    rows.append((f"accept@{d5}", f"{report['share_to_depth_5']:.2f}", "-", "-", "target >= 0.80"))
    rows.append(
        (
            f"growth@{d5}",
            f"{report['reference_growth_at_5']:.2f}x",
            f"depth 0: {report['reference_length_current'][0]:.1f} calls",
            "-",
            f"depth {d5}: {report['reference_length_current'][d5]:.1f} calls; target >= 4x",
        )
    )
    big = thousand_row_world()
    plan = Plan(
        parent=big.id,
        steps=(
            {"operator": "pagination", "target": "helpdesk.tickets", "params": {"page_size": 100}},
            {"operator": "export preparation", "target": "L1"},
        ),
    )
    child = apply_plan(big, plan)
    # A later round: the plan works on inherited views only, so Apply needs no analysis of the originals.
    later = Plan(parent=child.id, steps=({"operator": "sharding", "target": "L1", "params": {"parts": 2}},))
    grandchild = apply_plan(child, later)
    n = 5 if args.quick else 15
    for name, case in (("validate", (big, child, plan)), ("validate2", (child, grandchild, later))):
        assert validate(*case).accepted
        shared, unshared = interleaved(lambda c=case: validate(*c), lambda c=case: validate(*c, share=False), n)
        alone = p50(lambda c=case: check_admission(c[1]), n)
        note = "1,000-row world, 8 checks" if name == "validate" else "the same world, a depth-2 child"
        rows.append(
            (
                name,
                f"{shared:.1f} ms",
                f"unshared: {unshared:.1f} ms",
                f"{shared / unshared:.2f}",
                f"{note}; admission alone (compiling the child included) {alone:.1f} ms; target < 100 ms",
            )
        )
    print(f"{'metric':<10} {'envtrain':>12}  {'baseline (same run)':<28} {'ratio':>6}  note")
    for name, value, base, ratio, note in rows:
        print(f"{name:<10} {value:>12}  {base:<28} {ratio:>6}  {note}")


if __name__ == "__main__":
    main()
