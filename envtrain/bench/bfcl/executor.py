"""BFCL's own executor and checker, with fresh state for every episode.

BFCL keeps API instances in ``multi_turn_utils``' module globals under
``{model_name}_{entry_id}_{class}_instance`` (its checker adds ``_eval`` and ``_ground_truth``);
a second run under the same name would continue the first one's state. Every episode here runs
under a name of its own (``envtrain_<uuid>``), and its instances are dropped when it closes, so
episodes in parallel threads or one after another never share a world and memory does not grow.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict

from envtrain.bench.bfcl.data import BFCLEntry


class NativeGrade(BaseModel):
    """BFCL's verdict on one episode, as its eval runner reports it."""

    model_config = ConfigDict(frozen=True)

    valid: bool
    error_type: str = ""  # BFCL's, e.g. "multi_turn:instance_state_mismatch", "multi_turn:force_terminated"
    error_message: str = ""
    seconds: float = 0.0


class EpisodeExecutor:
    """BFCL's executor for one episode of one entry: ``execute`` runs calls in order against the
    episode's instances, exactly as BFCL's inference loop does (``is_evaL_run=False``)."""

    def __init__(self, entry: BFCLEntry) -> None:
        self.entry = entry
        # Only [A-Za-z0-9_]: BFCL rewrites [-./:] in instance names, and the prefix must survive that.
        self.model_name = f"envtrain_{uuid.uuid4().hex}"

    def execute(self, calls: list[str]) -> list[str]:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

        results, _ = execute_multi_turn_func_call(
            func_call_list=calls, initial_config=self.entry.initial_config, involved_classes=self.entry.involved_classes,
            model_name=self.model_name, test_entry_id=self.entry.id, long_context=self.entry.long_context, is_evaL_run=False,
        )
        return results

    def instances(self) -> dict[str, Any]:
        """The episode's live API instances (created on first use)."""
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

        _, instances = execute_multi_turn_func_call(
            func_call_list=[], initial_config=self.entry.initial_config, involved_classes=self.entry.involved_classes,
            model_name=self.model_name, test_entry_id=self.entry.id, long_context=self.entry.long_context, is_evaL_run=False,
        )
        return instances

    def close(self) -> None:
        drop_instances(self.model_name)

    def __enter__(self) -> "EpisodeExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def drop_instances(model_name: str) -> None:
    """Remove every instance BFCL cached for ``model_name`` (inference, ``_eval`` and ``_ground_truth`` keys)."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    cache = vars(multi_turn_utils)
    prefix = f"{model_name}_"
    for key in [k for k in list(cache) if k.startswith(prefix)]:
        cache.pop(key, None)


def native_check(entry: BFCLEntry, decoded: list[list[list[str]]]) -> NativeGrade:
    """BFCL's verdict: ``decoded`` is the model's calls per user turn, per step (steps without a
    decodable call left out, as BFCL's eval runner leaves them out). A run that stopped before the
    last user turn is ``force_terminated``, as in BFCL's ``_evaluate_single_multi_turn_entry``."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    start = time.perf_counter()
    if len(decoded) != len(entry.ground_truth):
        return NativeGrade(
            valid=False, error_type="multi_turn:force_terminated", seconds=time.perf_counter() - start,
            error_message=f"the run has {len(decoded)} user turns, the entry {len(entry.ground_truth)}",
        )
    model_name = f"envtrain_check_{uuid.uuid4().hex}"
    try:
        verdict = multi_turn_checker(decoded, entry.ground_truth, entry.raw(), entry.category, model_name)
    except Exception as exc:  # the checker asserts on shapes; a verdict, not a crash of the run
        verdict = {"valid": False, "error_type": "multi_turn:checker_error", "error_message": f"{type(exc).__name__}: {exc}"}
    finally:
        drop_instances(model_name)
    return NativeGrade(
        valid=bool(verdict.get("valid")), error_type=str(verdict.get("error_type", "")),
        error_message=str(verdict.get("error_message", "")), seconds=time.perf_counter() - start,
    )
