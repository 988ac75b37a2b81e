"""The local backend: a subprocess with rlimits in a temporary directory. NO ISOLATION.

The command sees the host's filesystem and network; only its resources are limited. It exists
for platforms without bubblewrap or Docker (macOS, locked-down CI) and for tests of the
workspace tools themselves, never for running untrusted generated code.

Its disk quota is a watch, not a wall: the command runs in a copy of the workspace whose size is
checked every 50 ms and once more at the end; past ``Limits.disk_bytes`` the command is killed and
the copy dropped. A fast writer can overshoot by what it writes in 50 ms, and a command may write
anywhere else the host lets it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from envtrain.sandbox.base import DISK_FULL, TIMEOUT, Limits, RunResult, materialize, prlimit_argv, read_back, run_process
from envtrain.sandbox.quota import copy_tree, tree_bytes
from envtrain.sandbox.uid import dropped_identity, nproc_limit

ENV_PATH = "/usr/local/bin:/usr/bin:/bin"


class LocalSandbox:
    backend = "local"
    isolated = False

    def __init__(self, files: Mapping[str, str], limits: Limits = Limits()) -> None:
        self.limits = limits
        self.root = Path(tempfile.mkdtemp(prefix="envtrain-local-"))
        # As root, drop to an unprivileged uid anyway: root ignores RLIMIT_NPROC, so a fork bomb would not be held.
        self._identity = dropped_identity()
        materialize(self.root, files, owner=self._identity)

    def run(self, command: str, timeout: float = 10.0) -> RunResult:
        argv: list[str] = []
        if self._identity is not None:
            uid, gid = self._identity
            argv += [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--nnp", "--"]
        argv += prlimit_argv(self.limits, nproc=nproc_limit(self.limits, self._identity)) + ["/bin/sh", "-c", command]
        quota = self.limits.disk_bytes
        work = copy_tree(self.root, "envtrain-local-run-", owner=self._identity) if quota else self.root
        env = {"PATH": ENV_PATH, "HOME": str(work), "LANG": "C.UTF-8", "TMPDIR": str(work)}
        try:
            result = run_process(argv, cwd=str(work), env=env, timeout=timeout, limits=self.limits,
                                 watch=(lambda: tree_bytes(work, quota) > quota) if quota else None)
            if not quota:
                return result
            why = result.discarded or (TIMEOUT if result.timed_out else DISK_FULL if tree_bytes(work, quota) > quota else "")
            if not why:
                shutil.rmtree(self.root)
                os.replace(work, self.root)
            return replace(result, discarded=why)
        finally:
            if work != self.root:
                shutil.rmtree(work, ignore_errors=True)

    def files(self) -> dict[str, str]:
        return read_back(self.root, self.limits).files

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def available() -> str | None:
    """None when usable, else why not."""
    if os.name != "posix":
        return "the local backend needs a POSIX system"
    return None
