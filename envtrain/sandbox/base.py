"""The sandbox interface: a workspace of text files, commands run in it, the files read back.

Every backend runs a command the same way: stdout and stderr go to files on the host (so a
command that prints gigabytes costs at most ``max_file_bytes`` of disk and the host reads back
only ``max_output_bytes``), the process runs in its own session so a wall-clock timeout kills
the whole group, and the workspace is read back without following links.
"""

from __future__ import annotations

import os
import posixpath
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable


class SandboxError(RuntimeError):
    """A sandbox could not be opened or used (a missing backend, a refused path)."""


@dataclass(frozen=True)
class Limits:
    """Resource limits applied to every command (rlimits where the backend has them)."""

    cpu_seconds: int = 10  # RLIMIT_CPU
    memory_bytes: int = 1 << 30  # RLIMIT_AS (address space); docker: the container's memory limit
    file_bytes: int = 16 << 20  # RLIMIT_FSIZE: the largest file a command can write
    processes: int = 64  # RLIMIT_NPROC (bwrap/local, counted per uid) or the container's pids limit
    open_files: int = 256  # RLIMIT_NOFILE
    max_output_bytes: int = 64 << 10  # stdout and stderr each, as returned
    max_workspace_bytes: int = 8 << 20  # read-back refuses a workspace larger than this
    max_workspace_files: int = 2000
    # The most a command may write into its workspace, temporary files included: bwrap and docker hold the
    # workspace in a tmpfs of this size, local watches and checks it. 0: no cap (bwrap and local then write
    # straight into the host folder).
    disk_bytes: int = 32 << 20


@dataclass(frozen=True)
class RunResult:
    exit_code: int  # -N: killed by signal N (the timeout kills with SIGKILL)
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    truncated: bool = False  # stdout or stderr was longer than the cap
    # Why the command's changes to the workspace were dropped ("" when kept): a command that times out,
    # fills its quota or leaves a workspace that cannot be read back leaves the workspace as it was.
    discarded: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.discarded

    @property
    def disk_full(self) -> bool:
        return self.discarded == DISK_FULL


DISK_FULL = "disk full"
TIMEOUT = "timeout"


@runtime_checkable
class Sandbox(Protocol):
    """One workspace. ``run`` never raises for what the command does; only for a broken sandbox."""

    backend: str
    isolated: bool  # False only for the local backend

    def run(self, command: str, timeout: float = 10.0) -> RunResult: ...

    def files(self) -> dict[str, str]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...


@dataclass(frozen=True)
class ReadBack:
    files: dict[str, str]
    skipped: tuple[str, ...] = field(default=())  # links, binary files, special files: not workspace text


def check_path(path: str) -> str:
    """A relative POSIX path inside the workspace, normalized; anything else is refused."""
    norm = posixpath.normpath(path.lstrip("/"))
    if norm in (".", "") or norm.startswith("..") or "\x00" in norm:
        raise SandboxError(f"path {path!r} is outside the workspace")
    return norm


def materialize(root: Path, files: Mapping[str, str], *, owner: tuple[int, int] | None = None) -> None:
    """Write the files under ``root``; with ``owner``, hand root and everything to that uid/gid."""
    for raw, content in files.items():
        target = root / check_path(raw)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    if owner is not None:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in (dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)):
                os.lchown(name, *owner)


def read_back(root: Path, limits: Limits) -> ReadBack:
    """The workspace's regular UTF-8 files. Links are never followed: a link to a host file
    made inside the sandbox must not let the host read that file back into the world."""
    out: dict[str, str] = {}
    skipped: list[str] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode):
                skipped.append(rel)
                continue
            total += st.st_size
            if total > limits.max_workspace_bytes or len(out) >= limits.max_workspace_files:
                raise SandboxError(f"the workspace grew past {limits.max_workspace_bytes} bytes or {limits.max_workspace_files} files")
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(limits.max_workspace_bytes + 1)
            try:
                out[rel] = data.decode("utf-8")
            except UnicodeDecodeError:
                skipped.append(rel)
    return ReadBack(out, tuple(skipped))


def _tail(path: Path, cap: int) -> tuple[str, bool]:
    with open(path, "rb") as fh:
        data = fh.read(cap + 1)
    return data[:cap].decode("utf-8", errors="replace"), len(data) > cap


def run_process(
    argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str] | None, timeout: float, limits: Limits,
    pass_fds: Sequence[int] = (), watch: Callable[[], bool] | None = None,
) -> RunResult:
    """Run argv in a new session with output to capped files; on timeout SIGKILL the group.

    ``watch``, polled every 50 ms while the command runs, returns True to kill it for filling its disk quota.
    """
    with tempfile.TemporaryDirectory(prefix="envtrain-out-") as tmp:
        out_path, err_path = Path(tmp, "out"), Path(tmp, "err")
        start = time.perf_counter()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(
                list(argv), cwd=cwd, env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL,
                stdout=out, stderr=err, start_new_session=True, close_fds=True, pass_fds=tuple(pass_fds),
            )
            timed_out, overfull = False, False
            deadline = start + timeout
            with _Exit(proc) as exited:
                while not exited.wait(max(0.0, min(0.05 if watch else timeout, deadline - time.perf_counter()))):
                    timed_out = watch is None or time.perf_counter() >= deadline
                    overfull = not timed_out and watch is not None and watch()
                    if timed_out or overfull:
                        kill_group(proc.pid)
                        break
            code = proc.wait()
        seconds = time.perf_counter() - start
        stdout, t1 = _tail(out_path, limits.max_output_bytes)
        stderr, t2 = _tail(err_path, limits.max_output_bytes)
    return RunResult(code, stdout, stderr, timed_out, seconds, t1 or t2, DISK_FULL if overfull else "")


class _Exit:
    """Waits for a process to exit, woken the moment it does (a pidfd where Linux has one);
    ``Popen.wait(timeout)`` polls with sleeps of up to 50 ms, most of a short command's cost."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.fd: int | None = None
        try:
            self.fd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            self.fd = None

    def wait(self, seconds: float) -> bool:
        if self.fd is None:
            try:
                self.proc.wait(timeout=seconds)
                return True
            except subprocess.TimeoutExpired:
                return False
        poller = select.poll()  # not select(): a busy process may hand out descriptors above 1024
        poller.register(self.fd, select.POLLIN)
        return bool(poller.poll(seconds * 1000))

    def __enter__(self) -> _Exit:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def prlimit_argv(limits: Limits, *, nproc: int | None = None) -> list[str]:
    """util-linux prlimit: sets the limits on itself, then execs the command (thread-safe, unlike preexec_fn)."""
    exe = shutil.which("prlimit") or "/usr/bin/prlimit"
    n = limits.processes if nproc is None else nproc
    return [
        exe, f"--cpu={limits.cpu_seconds}", f"--as={limits.memory_bytes}", f"--fsize={limits.file_bytes}",
        f"--nproc={n}", f"--nofile={limits.open_files}", "--core=0", "--",
    ]
