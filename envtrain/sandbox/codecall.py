"""``shell.call``: a tool of a generated app, run as code in a sandbox over the world's files.

The generated app's code is ``app/tools.py`` in the workspace; its read-only data is ``data/``,
its session state ``state/session.json``. Each call materializes the world's files into a fresh
sandbox, runs the tool through ``harness.py`` (passed on the command line, never stored in the
workspace), and writes the files it changed back into the world, as ``shell.run`` does. The
tool's name is the calling tool's own (``ctx.tool.name``), so one handler serves every tool.

What the agent sees: the tool's dict, or its ``{"error": {"kind", "message"}}`` as a structured
error (Table 16's categories mapped onto the runtime's kinds). A tool that raises, returns no dict,
runs past its time, fills its disk, or writes ``data/`` or ``app/`` is the environment's fault:
an ``internal`` error naming the Table 15 rule, and nothing it wrote is kept.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envtrain.core.errors import ErrorKind, ToolError
from envtrain.core.io import canonical_json
from envtrain.sandbox.base import Limits, RunResult, SandboxError

HARNESS = Path(__file__).with_name("harness.py")
CALL_TIMEOUT = 10.0
READ_ONLY = ("data/", "app/")  # Table 15 rule 3 (data), and the code itself
KINDS = {
    "missing_field": ErrorKind.MISSING_FIELD, "invalid_transition": ErrorKind.INVALID_TRANSITION,
    "permission_denied": ErrorKind.PERMISSION_DENIED, "session_not_found": ErrorKind.NOT_FOUND,
    "not_found": ErrorKind.NOT_FOUND, "malformed_arguments": ErrorKind.MALFORMED_ARGUMENTS,
    "constraint_violation": ErrorKind.CONSTRAINT_VIOLATION,
    "lock_timeout": ErrorKind.INTERNAL, "missing_binding": ErrorKind.INTERNAL,  # the environment's side: retry or re-initialize
}


@dataclass(frozen=True)
class Invocation:
    """One tool call as it ran: what came back and what it changed, before anything is kept."""

    run: RunResult
    result: dict[str, Any] | None = None  # the tool's dict
    violation: tuple[int, str] | None = None  # (Table 15 rule, message): the call broke the contract
    changed: dict[str, str] = field(default_factory=dict)
    deleted: tuple[str, ...] = ()

    @property
    def error(self) -> dict[str, Any] | None:
        err = (self.result or {}).get("error")
        return err if isinstance(err, dict) else None


def invoke(files: Mapping[str, str], tool: str, args: Mapping[str, Any], *, base_time: str, action_index: int, now: str,
           backend: str, limits: Limits = Limits(), timeout: float = CALL_TIMEOUT, before_call: str = "") -> Invocation:
    """Run one call; ``before_call`` is a shell prefix (the lock probe holds the session lock with it)."""
    from envtrain.sandbox import open_sandbox

    payload = canonical_json({"tool": tool, "args": dict(args), "base_time": base_time, "action_index": action_index, "now": now})
    command = f"{before_call}python3 -I -c {shlex.quote(HARNESS.read_text())} {shlex.quote(payload)}"
    with open_sandbox(backend, files, limits) as box:
        run = box.run(command, timeout=timeout)
        after = dict(files) if run.discarded else box.files()
    if run.discarded:
        what = {"timeout": f"ran past {timeout:g} s and was stopped", "disk full": "filled its disk quota"}.get(run.discarded, run.discarded)
        return Invocation(run, violation=(0, f"{tool} {what}; nothing it wrote was kept"))
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        answer = {}
    if "violation" in answer:
        rule, message = answer["violation"]
        return Invocation(run, violation=(int(rule), str(message)))
    if not isinstance(answer.get("result"), dict):
        tail = (run.stderr.strip().splitlines() or [f"exit code {run.exit_code}"])[-1]
        return Invocation(run, violation=(0, f"{tool} gave no answer ({tail[:200]})"))
    changed = {p: t for p, t in after.items() if files.get(p) != t}
    deleted = tuple(sorted(set(files) - set(after)))
    touched = sorted(p for p in [*changed, *deleted] if p.startswith(READ_ONLY))
    if touched:
        rule = 3 if any(p.startswith("data/") for p in touched) else 0
        return Invocation(run, answer["result"], (rule, f"{tool} wrote {', '.join(touched[:3])}, which is read-only"), changed, deleted)
    return Invocation(run, answer["result"], None, changed, deleted)


def call_tool(ctx: Any, args: dict[str, Any], backend: str, limits: Limits) -> dict[str, Any]:
    """The handler: a ToolContext and the call's arguments in, the tool's dict out (or a ToolError)."""
    world = ctx.world
    tool = ctx.tool.name
    try:
        inv = invoke(world.files(), tool, args, base_time=world.base_time, action_index=world.action_index,
                     now=ctx.ns.now, backend=backend, limits=limits)
    except SandboxError as exc:
        raise ToolError(ErrorKind.INTERNAL, f"{tool}: no sandbox: {exc}") from None
    if inv.violation is not None:
        rule, message = inv.violation
        label = f"Table 15 rule {rule}" if rule else "the tool contract"
        raise ToolError(ErrorKind.INTERNAL, f"{tool} broke {label}: {message}")
    error = inv.error
    if error is not None:
        kind = str(error.get("kind", ""))
        mapped = KINDS.get(kind, ErrorKind.INTERNAL)
        label = "" if mapped.value == kind else f"[{kind}] "  # Table 16's own name where the runtime has none
        raise ToolError(mapped, f"{label}{error.get('message', '')}".strip())
    conn = world.conn
    conn.executemany('INSERT OR REPLACE INTO "files" (path, content) VALUES (?, ?)', sorted(inv.changed.items()))
    conn.executemany('DELETE FROM "files" WHERE path = ?', [(p,) for p in inv.deleted])
    return inv.result or {}
