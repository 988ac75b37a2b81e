"""Environment-core latency against baselines measured in the same run (ratios, not absolute asserts).

    python benchmarks/core_latency.py            # full run (about a minute)
    python benchmarks/core_latency.py --quick    # smaller, for CI smoke

Rows:
  step     p50 per tool call on the helpdesk app, 1,000-ticket world, a read/write mix,
           vs BFCL's multi-turn executor replaying its own gold calls (target: ratio <= 0.5)
  reset    p50 of Session.reset() on a 10,000-row world, vs rebuilding that world from its
           rows (target: under 1 ms)
  verify   p50 of one 20-assertion verify(), vs the same assertions one query each
           (target: under 1 ms)
  admit    p50 of the full admission check of examples/helpdesk_escalation.yaml, vs one
           replay of its reference solution in a fresh runtime (target: under 20 ms)
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from envtrain.core import Environment, Runtime, World  # noqa: E402
from envtrain.core.admission import check_admission  # noqa: E402
import timing  # noqa: E402  (benchmarks/, the script's own folder)


def p50(fn: Callable[[], Any], n: int) -> float:
    """Median milliseconds over ``n`` calls, after up to 20 warm-up calls (statement caches fill)."""
    return timing.p50(fn, n, warmup=min(20, n))


def helpdesk_env(tickets: int, comments: int = 0) -> Environment:
    rng = random.Random(0)
    agents = [{"email": f"agent{i}@support.example", "name": f"Agent {i}", "team": t, "active": True}
              for i, t in enumerate(["tier1", "tier2", "billing", "security"] * 5)]
    rows = [{
        "id": i, "subject": f"Ticket {i} about {rng.choice(['login', 'invoice', 'refund', 'export'])}",
        "body": "details " * 5, "customer": f"c{i}@acme.test",
        "priority": rng.choice(["low", "normal", "high", "urgent"]),
        "status": rng.choice(["open", "pending", "resolved"]), "tags": [],
        "created_at": "2026-03-01T10:00:00Z", "updated_at": "2026-03-01T10:00:00Z",
    } for i in range(1, tickets + 1)]
    notes = [{"id": i, "ticket_id": rng.randint(1, tickets), "author": "agent0@support.example",
              "body": f"note {i}", "internal": False, "created_at": "2026-03-01T11:00:00Z"} for i in range(1, comments + 1)]
    positive = [{"name": f"a{i}", "entity": "helpdesk.tickets", "where": [f"id = {i}", "status = 'escalated'"], "count": "= 1"}
                for i in range(1, 11)]
    negative = [{"name": f"n{i}", "entity": "helpdesk.comments", "where": [f"ticket_id = {i}", "body contains 'x'"], "count": "= 0"}
                for i in range(1, 11)]
    return Environment.parse({
        "apps": ["helpdesk"], "request": "benchmark", "persona": {"email": "agent0@support.example"},
        "world": {"base_time": "2026-03-02T09:00:00Z",
                  "tables": {"helpdesk.agents": agents, "helpdesk.tickets": rows, "helpdesk.comments": notes}},
        "verifier": {"positive": positive, "negative": negative},
        "reference_solution": [{"tool": "escalate_ticket", "arguments": {"ticket_id": 1, "team": "tier2"}}],
    })


def bench_step(n: int) -> float:
    runtime = Runtime(helpdesk_env(1000))
    session = runtime.session()
    session.reset()
    rng = random.Random(1)
    calls = []
    for _ in range(n):
        i = rng.randint(1, 1000)
        calls.append(rng.choice([
            {"tool": "get_ticket", "arguments": {"ticket_id": i}},
            {"tool": "list_tickets", "arguments": {"status": "open", "limit": 10}},
            {"tool": "set_priority", "arguments": {"ticket_id": i, "priority": "high"}},
            {"tool": "add_comment", "arguments": {"ticket_id": i, "body": "looking into it"}},
            {"tool": "assign_ticket", "arguments": {"ticket_id": i, "assignee": "agent1@support.example"}},
            {"tool": "search_tickets", "arguments": {"query": "refund"}},
        ]))
    times = []
    for call in calls:
        t = time.perf_counter()
        session.step(call)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 300 if args.quick else 3000

    rows: list[tuple[str, float, str, float, str, bool]] = []

    from bfcl_baseline import measure_bfcl_per_call

    bfcl = measure_bfcl_per_call(n_entries=20 if args.quick else 50, repeats=3)["per_call_ms_p50"]
    step = bench_step(n)
    rows.append(("step p50", step, "BFCL executor per call", bfcl, "ratio <= 0.5", step / bfcl <= 0.5))

    big = helpdesk_env(8000, comments=1980)  # 8,000 tickets + 1,980 comments + 20 agents = 10,000 rows
    runtime = Runtime(big)
    session = runtime.session()
    reset = p50(session.reset, n)
    rebuild = p50(lambda: World.create(runtime.schema, base_time=big.world.base_time, tables=big.world.tables, files={}).close(), 5)
    rows.append(("reset p50 (10k rows)", reset, "rebuild world from rows", rebuild, "< 1 ms", reset < 1.0))

    small = Runtime(helpdesk_env(1000, comments=500))
    with small.session() as s:
        s.reset()
        verify = p50(s.verify, n)
        compiled = small.verifier
        singles = []
        from envtrain.core.compile import Bindings, Compiler, bind
        from envtrain.core.condition import Site

        for _, a in compiled.assertions:
            frag = Compiler(small.schema, Site.VERIFIER).count(a)
            singles.append((frag.sql, bind(frag.params, Bindings({}, {}, {}, s.world.now))))
        unbatched = p50(lambda: [s.world.conn.execute(sql, p).fetchone() for sql, p in singles], n)
    rows.append(("verify p50 (20 assertions)", verify, "one query per assertion", unbatched, "< 1 ms", verify < 1.0))

    example = Environment.load(ROOT / "examples" / "helpdesk_escalation.yaml")

    def replay() -> None:
        with Runtime(example).session() as s:
            s.reset()
            for call in example.reference_solution:
                s.step({"tool": call.tool, "arguments": call.arguments})

    admit = p50(lambda: check_admission(example), 20 if args.quick else 100)
    one_replay = p50(replay, 20 if args.quick else 100)
    rows.append(("admission p50 (example)", admit, "compile + one replay of pi", one_replay, "< 20 ms", admit < 20.0))

    print(f"{'metric':28} {'envtrain ms':>12} {'baseline':>26} {'baseline ms':>12} {'ratio':>7}  target        met")
    for name, ours, base_name, base, target, met in rows:
        print(f"{name:28} {ours:12.4f} {base_name:>26} {base:12.4f} {ours / base:7.3f}  {target:12}  {'yes' if met else 'NO'}")


if __name__ == "__main__":
    main()
