"""Baseline: per-call latency of BFCL's multi-turn executor replaying BFCL's gold calls.

Lets our benchmark compare envtrain step latency against BFCL in the same run/process.

Minimal install (what `make setup` does). bfcl-eval's declared deps pull
openai/anthropic/sentence-transformers(torch)/faiss and pin numpy==1.26.4; the executor
and the 8 multi-turn base API classes only need mpmath (stdlib otherwise):
    pip install --no-deps bfcl-eval==2026.3.23
    pip install mpmath==1.3.0
Data (question + possible_answer JSONL) ships inside the wheel; nothing is downloaded.
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from importlib import import_module, resources
from typing import Any

from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
    execute_multi_turn_func_call,
)

_ERR_PREFIX = "Error during execution"  # what the executor returns when eval() raises


def _find_data(subdir: str | None) -> Any:
    # Glob rather than hard-code "v4" so a BFCL version bump (v3 -> v4 -> ...) still works.
    root = resources.files("bfcl_eval") / "data"
    if subdir:
        root = root / subdir
    hits = sorted(p for p in root.iterdir() if p.name.endswith("_multi_turn_base.json"))
    if not hits:
        raise FileNotFoundError(f"no *_multi_turn_base.json under {root}")
    return hits[-1]


def _read_jsonl(path: Any) -> list[dict[str, Any]]:
    # BFCL "json" files are actually JSON Lines.
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_base_entries(n_entries: int) -> list[tuple[dict[str, Any], list[list[str]]]]:
    """First n multi_turn_base entries paired with their gold call lists (one list per turn)."""
    questions = _read_jsonl(_find_data(None))[:n_entries]
    answers = {a["id"]: a["ground_truth"] for a in _read_jsonl(_find_data("possible_answer"))}
    return [(q, answers[q["id"]]) for q in questions]


def _is_ok(result: str) -> bool:
    # Two failure shapes: eval() raised (prefixed string), or the API returned {"error": ...}
    # (serialised to JSON by the executor). Gold calls should produce neither.
    if result.startswith(_ERR_PREFIX):
        return False
    if result.startswith("{"):
        try:
            obj = json.loads(result)
        except ValueError:
            return True
        return not (isinstance(obj, dict) and "error" in obj)
    return True


def _drop_cached_instances(prefix: str) -> None:
    # The executor caches API instances in multi_turn_utils' module globals, keyed by
    # "{model_name}_{entry_id}_{class}_instance"; remove ours so memory does not grow.
    g = vars(multi_turn_utils)
    for key in [k for k in g if k.startswith(prefix)]:
        del g[key]


def _replay_once(
    entries: list[tuple[dict[str, Any], list[list[str]]]],
) -> tuple[float, list[float], int, int]:
    """One full replay. Returns (seconds_total, per-turn per-call seconds, calls, ok_results)."""
    # Unique per replay so no instance from an earlier replay (or other user) is reused;
    # only [A-Za-z0-9_] so BFCL's re.sub([-./:] -> _) leaves the prefix intact.
    model_name = f"envtrain_bfcl_{uuid.uuid4().hex}"
    total, calls, ok = 0.0, 0, 0
    per_call: list[float] = []
    try:
        for entry, gold_turns in entries:
            for turn_calls in gold_turns:
                # Same arguments the BFCL checker uses for gold calls (base = not long_context).
                t0 = time.perf_counter()
                results, _ = execute_multi_turn_func_call(
                    func_call_list=turn_calls,
                    initial_config=entry["initial_config"],
                    involved_classes=entry["involved_classes"],
                    model_name=model_name,
                    test_entry_id=entry["id"],
                    long_context=False,
                    is_evaL_run=False,
                )
                dt = time.perf_counter() - t0
                total += dt
                if turn_calls:  # a few gold turns are empty (nothing to call); skip in per-call
                    per_call.append(dt / len(turn_calls))
                    calls += len(turn_calls)
                    ok += sum(_is_ok(r) for r in results)
            _drop_cached_instances(model_name)
    finally:
        _drop_cached_instances(model_name)
    return total, per_call, calls, ok


def measure_bfcl_per_call(n_entries: int = 20, repeats: int = 3) -> dict[str, float | int]:
    """Replay gold calls of the first n_entries multi_turn_base entries, all turns.

    per-call time = (time of one execute call) / (calls in it); p50 over turns. The first
    turn of each entry includes BFCL's instance creation + _load_scenario (deepcopy of the
    initial config), as in BFCL itself. Stats come from the fastest of `repeats` replays.
    """
    entries = load_base_entries(n_entries)
    # Import API modules up front so module import time is not billed to the first call.
    for entry, _ in entries:
        for cls in entry["involved_classes"]:
            import_module(CLASS_FILE_PATH_MAPPING[cls])
    runs = [_replay_once(entries) for _ in range(max(1, repeats))]
    total, per_call, calls, ok = min(runs, key=lambda r: r[0])
    return {
        "calls": calls,
        "ok_results": ok,
        "seconds_total": total,
        "per_call_ms_p50": statistics.median(per_call) * 1e3 if per_call else float("nan"),
        # Call-weighted mean (total time / calls), not the mean of per-turn ratios.
        "per_call_ms_mean": total / calls * 1e3 if calls else float("nan"),
    }


if __name__ == "__main__":
    print(measure_bfcl_per_call())
