"""The scaling report: what was accepted and rejected (per operator, per check), how deep the
lineages got, how the reference path grew, and what it cost.

Reference path length at depth d uses RES App. C: the current-state mean M(d) (a lineage that
stopped early keeps its last accepted environment) and the historical mean H(d) (each lineage's
mean over depths 0..d, then the mean over lineages).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from envtrain.scale.evaluate import STOPPED
from envtrain.scale.operators import origin


def build_report(out: Path, depth: int, *, wall_seconds: float | None = None) -> dict[str, Any]:
    lineages = []
    accepted_ops: Counter[str] = Counter()
    rejected_ops: Counter[str] = Counter()
    failed_checks: Counter[str] = Counter()
    attempts_per_child: list[int] = []
    seconds_per_child: list[float] = []
    tokens = calls = proposer_seconds = 0.0
    evaluations: list[dict[str, Any]] = []
    for folder in sorted((out / "lineages").glob("*")):
        status = _read(folder / "status.json")
        if not status:
            continue
        lineages.append(status)
        evaluations.extend(r for r in map(_read, sorted(folder.glob("*.eval.json"))) if r)
        for path in sorted(folder.glob("*.validation.json")) + sorted(folder.glob("*.rejected.json")):
            record = _read(path)
            attempts = record.get("attempts", [])
            for attempt in attempts:
                if attempt.get("accepted"):
                    continue
                failed_checks.update(attempt.get("failed", []))
                rejected_ops.update(attempt.get("steps", []))
            cost = record.get("proposer", {})
            tokens += cost.get("tokens", 0)
            calls += cost.get("calls", 0)
            proposer_seconds += cost.get("seconds", 0)
            if path.name.endswith(".validation.json"):
                attempts_per_child.append(len(attempts))
                seconds_per_child.append(record.get("seconds", 0.0))
                d = path.name.split(".")[0]
                plan = _read(folder / f"{d}.plan.json")
                accepted_ops.update(step["operator"] for step in plan.get("steps", []))
    n = len(lineages)
    reached = Counter(s["depth"] for s in lineages)
    current, historical = [], []
    for d in range(depth + 1):
        values = [_at(s["reference_lengths"], d) for s in lineages]
        current.append(_mean(values))
        historical.append(_mean([_mean([_at(s["reference_lengths"], r) for r in range(d + 1)]) for s in lineages]))
    children = sum(s["depth"] for s in lineages)
    report = {
        "lineages": n,
        "children": children,
        "depth_cap": depth,
        "reached": {str(d): reached.get(d, 0) for d in range(depth + 1)},
        "at_cap": sum(1 for s in lineages if s["depth"] >= depth),
        "share_at_cap": round(sum(1 for s in lineages if s["depth"] >= depth) / n, 4) if n else 0.0,
        "share_to_depth_5": round(sum(1 for s in lineages if s["depth"] >= min(5, depth)) / n, 4) if n else 0.0,
        "reference_length_current": [round(x, 2) for x in current],
        "reference_length_historical": [round(x, 2) for x in historical],
        "reference_growth_at_5": round(current[min(5, depth)] / current[0], 3) if n and current[0] else None,
        "operators_accepted": dict(sorted(accepted_ops.items())),
        "operators_rejected": dict(sorted(rejected_ops.items())),
        # RES App. D.1's 17, or envtrain's gating operators beyond them
        "operator_origins": {name: origin(name) for name in sorted(set(accepted_ops) | set(rejected_ops))},
        "checks_failed": dict(sorted(failed_checks.items())),
        "outer_executions_per_child": round(_mean(attempts_per_child), 3),
        "seconds_per_child": round(_mean(seconds_per_child), 4),
        "proposer": {"calls": calls, "tokens": tokens, "seconds": round(proposer_seconds, 3)},
        "stopped": {s["root"]: s.get("reason", "") for s in lineages if s.get("state") == "stopped"},
        "warnings": [f"{s['root']}: {w}" for s in lineages for w in s.get("warnings", [])],
        "evaluation": _evaluation(evaluations, lineages),
    }
    if wall_seconds is not None:
        report["wall_seconds"] = round(wall_seconds, 3)
        report["children_per_second"] = round(children / wall_seconds, 3) if wall_seconds else None
    return report


def _evaluation(records: list[dict[str, Any]], lineages: list[dict[str, Any]]) -> dict[str, Any]:
    """Target evaluation at selected nodes: attempts and their outcomes, in all and by depth."""
    by_depth: dict[str, dict[str, int]] = {}
    for r in records:
        row = by_depth.setdefault(str(r.get("depth")), {"nodes": 0, "attempts": 0, "passes": 0, "stops": 0})
        row["nodes"] += 1
        row["attempts"] += len(r.get("attempts", []))
        row["passes"] += r.get("passes", 0)
        row["stops"] += bool(r.get("stop"))
    return {
        "nodes": len(records),
        "attempts": sum(len(r.get("attempts", [])) for r in records),
        "passes": sum(r.get("passes", 0) for r in records),
        "assessed_failures": sum(r.get("assessed_failures", 0) for r in records),
        "measurement_errors": sum(r.get("measurement_errors", 0) for r in records),
        "lineages_stopped": sum(1 for s in lineages if str(s.get("reason", "")).startswith(STOPPED)),
        "by_depth": dict(sorted(by_depth.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else -1)),
    }


def _at(values: list[int], d: int) -> float:
    return float(values[min(d, len(values) - 1)]) if values else 0.0


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
