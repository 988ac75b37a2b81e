"""Checker scripts: a verifier the condition form cannot say, run in a sandbox over the final workspace.

A checker is a Python 3 script (the standard library only). It runs with the workspace as its
working directory and reports on its last line of stdout one JSON object:

    {"pass": true, "score": 1.0, "detail": "3 of 3 invoices reconciled"}

``pass`` is required; ``score`` (0-1) and ``detail`` are reported beside it. A script that
exits non-zero, times out, prints no such line or fills its disk quota has failed. Whatever it
writes is dropped: a check never changes the world. The script is passed on the command line,
not written into the workspace, so it does not see itself among the files it checks.

Verdicts are memoized per (script, workspace) in a bounded cache owned by the handler family, so
admission, which asks the same question of the same world many times, runs each once.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from envtrain.core.io import canonical_json
from envtrain.sandbox.base import Limits, SandboxError

MAX_SCRIPT_CHARS = 64_000  # passed as one argument: Linux caps one at 128 KiB
TIMEOUT = 20.0


def run_check(files: Mapping[str, str], script: str, backend: str, limits: Limits = Limits(), timeout: float = TIMEOUT) -> dict[str, Any]:
    """{"pass": bool, "score": float | None, "detail": str} for the script over these files."""
    from envtrain.sandbox import open_sandbox

    if not script.strip():
        return _fail("the check has no script")
    if len(script) > MAX_SCRIPT_CHARS:
        return _fail(f"the script is longer than {MAX_SCRIPT_CHARS} characters")
    try:
        with open_sandbox(backend, files, limits) as box:
            result = box.run(f"exec python3 -I -c {shlex.quote(script)}", timeout=timeout)
    except SandboxError as exc:
        return _fail(f"no sandbox: {exc}")
    if result.timed_out:
        return _fail(f"the script ran past {timeout:g} s")
    if result.disk_full:
        return _fail("the script filled its disk quota")
    if result.exit_code != 0:
        tail = result.stderr.strip().splitlines()[-1:] or [f"exit code {result.exit_code}"]
        return _fail(f"the script failed: {tail[0][:200]}")
    return parse_verdict(result.stdout)


def parse_verdict(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.strip().splitlines() if line.strip()]
    try:
        verdict = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        verdict = None
    if not isinstance(verdict, dict) or not isinstance(verdict.get("pass"), bool):
        return _fail('the script\'s last line is not {"pass": true|false, ...}')
    score = verdict.get("score")
    if not isinstance(score, (int, float)) or isinstance(score, bool) or not 0 <= score <= 1:
        score = 1.0 if verdict["pass"] else 0.0
    return {"pass": verdict["pass"], "score": float(score), "detail": str(verdict.get("detail", ""))[:200]}


def _fail(detail: str) -> dict[str, Any]:
    return {"pass": False, "score": 0.0, "detail": detail}


class CheckCache:
    """Verdicts by (backend, script, files) digest; the oldest dropped past ``size``. Thread-safe."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._verdicts: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.runs = 0  # sandbox runs made (for tests and benchmarks)

    def run(self, files: Mapping[str, str], script: str, backend: str, limits: Limits) -> dict[str, Any]:
        key = hashlib.sha256(canonical_json([backend, script, dict(files)]).encode()).hexdigest()
        with self._lock:
            if key in self._verdicts:
                self._verdicts.move_to_end(key)
                return dict(self._verdicts[key])
        verdict = run_check(files, script, backend, limits)
        with self._lock:
            self.runs += 1
            self._verdicts[key] = verdict
            while len(self._verdicts) > self.size:
                self._verdicts.popitem(last=False)
        return dict(verdict)
