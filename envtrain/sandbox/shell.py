"""The ``shell`` handler family: ``shell.run`` runs a command over the world's files in a sandbox;
``shell.check`` runs a verifier's checker script over them (``envtrain.sandbox.checker``);
``shell.call`` runs a tool of a generated app as code (``envtrain.sandbox.codecall``).

Where the sandbox lives: nowhere between calls. Each call materializes the world's ``files``
table into a fresh sandbox workspace, runs the command, writes the changed and deleted files
back into the world, and closes the sandbox. The world stays the only state, so

- reset is ``World.restore`` and gives back W0's hash (admission condition 5): no workspace
  directory can keep a file that the world forgot, and a refused call rolls back with the
  session's savepoint like any other write;
- sessions are independent: no two share a workspace, a process or a uid (each sandbox draws its own);
- snapshot, hashing and verifiers see every file a command wrote, through the ``files`` entity.

The price is a materialization per command (milliseconds for the text workspaces used here).
The backend comes from ``shell_handlers(backend)``, or from ``ENVTRAIN_SANDBOX`` when the runtime
loads the family by name (default ``bwrap``). The result holds no timing, so replays are exact.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from envtrain.core.errors import ErrorKind, ToolError
from envtrain.core.runtime import Handler, ToolContext
from envtrain.sandbox import Limits, SandboxError, open_sandbox
from envtrain.sandbox.checker import CheckCache
from envtrain.sandbox.codecall import call_tool

MAX_TIMEOUT = 30.0
MAX_FILE_CHARS = 200_000  # as the workspace app's own write tools
MAX_COMMAND_CHARS = 8_000


def shell_handlers(backend: str | None = None, limits: Limits = Limits()) -> Mapping[str, Handler]:
    """The family as the runtime wants it; the backend is bound now, not read per call."""
    chosen = backend or os.environ.get("ENVTRAIN_SANDBOX", "bwrap")

    checks = CheckCache()

    def run(ctx: ToolContext, args: dict[str, Any]) -> Any:
        return run_command(ctx, args, chosen, limits)

    def check(ctx: ToolContext, args: dict[str, Any]) -> Any:
        return checks.run(ctx.world.files(), str(args.get("script", "")), chosen, limits)

    def call(ctx: ToolContext, args: dict[str, Any]) -> Any:
        return call_tool(ctx, args, chosen, limits)

    return MappingProxyType({"shell.run": run, "shell.check": check, "shell.call": call})


def run_command(ctx: ToolContext, args: dict[str, Any], backend: str, limits: Limits) -> dict[str, Any]:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError(ErrorKind.MISSING_FIELD, "missing required field 'command': a shell command such as 'wc -l data/orders.csv'")
    if len(command) > MAX_COMMAND_CHARS:
        raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"a command has at most {MAX_COMMAND_CHARS} characters")
    timeout = args.get("timeout", 10)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= MAX_TIMEOUT:
        raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"timeout is a number of seconds in (0, {MAX_TIMEOUT:g}]")
    before = ctx.world.files()
    try:
        with open_sandbox(backend, before, limits) as box:
            result = box.run(command, timeout=float(timeout))
            after = before if result.discarded else box.files()
    except SandboxError as exc:
        # The workspace grew past its limits, or no sandbox could be opened: nothing is written back.
        raise ToolError(ErrorKind.CONSTRAINT_VIOLATION, f"the command's workspace was not kept: {exc}") from None
    if result.disk_full:
        raise ToolError(ErrorKind.CONSTRAINT_VIOLATION, f"the command filled its workspace quota ({limits.disk_bytes} bytes, "
                        "temporary files included) and was stopped; nothing it wrote was kept")
    if result.discarded and not result.timed_out:
        raise ToolError(ErrorKind.CONSTRAINT_VIOLATION, f"nothing the command wrote was kept: {result.discarded}")
    changed = sorted(p for p, text in after.items() if before.get(p) != text)
    deleted = sorted(set(before) - set(after))
    for path in changed:
        if len(after[path]) > MAX_FILE_CHARS:
            raise ToolError(ErrorKind.CONSTRAINT_VIOLATION, f"{path}: a file holds at most {MAX_FILE_CHARS} characters")
    conn = ctx.world.conn
    conn.executemany('INSERT OR REPLACE INTO "files" (path, content) VALUES (?, ?)', [(p, after[p]) for p in changed])
    conn.executemany('DELETE FROM "files" WHERE path = ?', [(p,) for p in deleted])
    return {
        "exit_code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr, "timed_out": result.timed_out,
        "truncated": result.truncated, "changed": changed, "deleted": deleted,
    }
