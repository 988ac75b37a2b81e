"""EnvCraft Table 15, checked by running the generated code in a sandbox (what a reading cannot see).

- rule 1: every tool called without its required fields answers a ``missing_field`` error that
  names one (Table 16), and no call of the reference solution raises or returns something else;
- rule 3: no call writes under data/ (``codecall.invoke`` compares the workspace before and after);
- rule 5: a write of the reference solution, called while another process holds the session lock,
  answers an error within ``LOCK_BOUND`` seconds, without writing and without naming the lock file;
- rule 6: the reference solution, replayed, answers the same and leaves the same files (a value
  read from the wall clock differs between runs).

Each call is one sandbox (``envtrain.sandbox.codecall``); the time is the session's, base_time +
action_index, as it will be in a rollout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from envtrain.core.compile import ISO_SECONDS
from envtrain.core.env import Environment
from envtrain.core.world import parse_time
from envtrain.sandbox.base import Limits
from envtrain.sandbox.codecall import Invocation, invoke
from envtrain.synth.codegen.document import STATE_PATH
from envtrain.synth.codegen.rules import Violation

LOCK_BOUND = 5.0  # seconds a call may wait on a held lock before it must answer
LOCK_FILE = "state/session.lock"
# Holds the session lock, then execs the harness with the lock's descriptor kept open across exec.
_HOLDER = ("import fcntl, os, sys; os.makedirs('state', exist_ok=True); f = open('state/session.lock', 'a'); "
           "fcntl.flock(f, fcntl.LOCK_EX); os.set_inheritable(f.fileno(), True); os.execvp(sys.argv[1], sys.argv[1:])")


@dataclass
class ProbeReport:
    violations: list[Violation] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # not a Table 15 rule: a reference step that is refused
    calls: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations and not self.failures


def _now(base_time: str, index: int) -> str:
    return (parse_time(base_time) + timedelta(seconds=index)).strftime(ISO_SECONDS)  # as World.now formats it


def probe(env: Environment, backend: str, limits: Limits = Limits()) -> ProbeReport:
    report = ProbeReport()
    base = env.world.base_time
    w0 = dict(env.world.files)
    tools = {t.name: t for a in env.apps for t in a.tools if t.handler == "shell.call"}

    def call(files: Mapping[str, str], tool: str, args: Mapping[str, Any], index: int, **kw: Any) -> Invocation:
        report.calls += 1
        return invoke(files, tool, args, base_time=base, action_index=index, now=_now(base, index), backend=backend, limits=limits, **kw)

    def flag(inv: Invocation, where: str) -> bool:
        if inv.violation is not None:
            rule, message = inv.violation
            report.violations.append(Violation(rule, where, message))
            return True
        return False

    # rule 1: required fields left out
    for name, tool in sorted(tools.items()):
        required = list(tool.parameters.get("required", ()))
        if not required:
            continue
        inv = call(w0, name, {}, 0)
        if flag(inv, f"{name}({{}})"):
            continue
        error = inv.error or {}
        if error.get("kind") != "missing_field" or not any(r in str(error.get("message", "")) for r in required):
            report.violations.append(Violation(1, f"{name}({{}})", f"answered {str(inv.result)[:160]} instead of a missing_field "
                                                                   f"error naming one of {required}"))

    # the reference solution twice (rule 6), and the lock probe on its first write (rule 5)
    runs: list[list[Any]] = []
    lock_probe: tuple[dict[str, str], Any, int] | None = None
    for attempt in range(2):
        files, answers = dict(w0), []
        for i, step in enumerate(env.reference_solution):
            tool = tools.get(step.tool)
            if tool is None:
                continue
            if attempt == 0 and lock_probe is None and tool.writes:
                lock_probe = (dict(files), step, i)
            inv = call(files, step.tool, step.arguments, i)
            if flag(inv, f"reference step {i} ({step.tool})"):
                return report
            if inv.error is not None:
                report.failures.append(f"reference step {i} ({step.tool}) is refused: {inv.error}")
                return report
            files.update(inv.changed)
            for path in inv.deleted:
                files.pop(path, None)
            answers.append(inv.result)
        runs.append([answers, files])
    if runs[0] != runs[1]:
        report.violations.append(Violation(6, "reference solution", "two replays answer differently or leave different files "
                                                                    "(a value from the wall clock, or from an unseeded random source?)"))
    if lock_probe is not None:
        files, step, index = lock_probe
        holder = f"python3 -I -c \"{_HOLDER}\" "
        inv = call(files, step.tool, step.arguments, index, before_call=holder, timeout=LOCK_BOUND + 3)
        where = f"{step.tool} with the session lock held"
        if inv.run.timed_out:
            report.violations.append(Violation(5, where, f"did not answer within {LOCK_BOUND:g} s: the lock wait has no bound"))
        elif not flag(inv, where):
            if inv.error is None:
                if STATE_PATH in inv.changed:
                    report.violations.append(Violation(5, where, "wrote the session while another worker held its lock"))
            elif LOCK_FILE in str(inv.error.get("message", "")) or "session.lock" in str(inv.error.get("message", "")):
                report.violations.append(Violation(5, where, "the error exposes the lock path (Table 16: ask for a retry without it)"))
            elif inv.run.seconds > LOCK_BOUND + 1:
                report.violations.append(Violation(5, where, f"waited {inv.run.seconds:.1f} s for the lock (at most {LOCK_BOUND:g})"))
    return report
