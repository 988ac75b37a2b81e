"""The bubblewrap backend (the default on Linux): a throwaway mount, pid, net, ipc and uts
namespace per command over a host directory holding the workspace.

Inside: /usr (and the merged-usr links) and a few /etc files read-only, a fresh /proc and /dev,
a size-capped /tmp, the workspace at /workspace, no network (only a loopback in a new net
namespace), a dropped uid, and the rlimits of ``Limits`` set by prlimit after the uid drop.
Killing bwrap's pid 1 (it dies with its parent, and the timeout kills the whole process group)
takes every process of the pid namespace with it.

The workspace is a tmpfs of ``Limits.disk_bytes`` holding a copy of the host folder, which is
bound read-only (``envtrain.sandbox.quota``): no host path is writable at all, and the folder
takes the copy back only when the command ends inside its limits. With ``disk_bytes=0`` the
host folder itself is bound writable at /workspace (no quota; the older, faster layout).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from envtrain.sandbox import quota
from envtrain.sandbox.base import TIMEOUT, Limits, RunResult, SandboxError, materialize, prlimit_argv, read_back, run_process
from envtrain.sandbox.uid import dropped_identity, nproc_limit

WORKDIR = "/workspace"
ENV_PATH = "/usr/local/bin:/usr/bin:/bin"
# What programs need from /etc (dynamic linker cache, alternatives links, name of the nobody user);
# not the whole of /etc, which holds the host's configuration.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "passwd", "group", "nsswitch.conf", "mime.types")
MERGED_USR = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
TMP_BYTES = 64 << 20


class BwrapSandbox:
    backend = "bwrap"
    isolated = True

    def __init__(self, files: Mapping[str, str], limits: Limits = Limits()) -> None:
        why = available()
        if why is not None:
            raise SandboxError(why)
        self.limits = limits
        self.root = Path(tempfile.mkdtemp(prefix="envtrain-bwrap-"))
        self._identity = dropped_identity()
        materialize(self.root, files, owner=self._identity)
        self._prefix = self._bwrap_argv()
        self._nproc = nproc_limit(self.limits, self._identity)

    def _bwrap_argv(self) -> list[str]:
        # As root, no user namespace: root inside one could not enter a workspace owned by the dropped uid
        # (unmapped there); setpriv drops to that uid instead. Everything else is unshared either way.
        unshare = ["--unshare-all"] if self._identity is None else ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        argv = [shutil.which("bwrap") or "bwrap", *unshare, "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
        for name in MERGED_USR:
            path = Path("/", name)
            if path.is_symlink():
                argv += ["--symlink", os.readlink(path), f"/{name}"]
            elif path.is_dir():
                argv += ["--ro-bind", str(path), f"/{name}"]
        argv += ["--perms", "0755", "--dir", "/etc"]
        for name in ETC_FILES:
            if Path("/etc", name).exists():
                argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
        if self.limits.disk_bytes:
            argv += ["--ro-bind", str(self.root), quota.SEED, "--perms", "01777", "--size", str(self.limits.disk_bytes), "--tmpfs", WORKDIR]
        else:
            argv += ["--bind", str(self.root), WORKDIR]
        argv += ["--chdir", WORKDIR, "--clearenv",
                 "--setenv", "PATH", ENV_PATH, "--setenv", "HOME", WORKDIR, "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp"]
        if self._identity is None:
            # Unprivileged: bwrap maps us to nobody inside its user namespace and drops every capability.
            argv += ["--uid", "65534", "--gid", "65534", "--cap-drop", "ALL", "--"]
        else:
            # As root: setpriv changes the real uid (so RLIMIT_NPROC counts), which also clears the
            # capabilities; no-new-privs keeps a setuid binary from taking them back.
            uid, gid = self._identity
            argv += ["--", "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--nnp", "--"]
        return argv

    def run(self, command: str, timeout: float = 10.0) -> RunResult:
        limited = prlimit_argv(self.limits, nproc=self._nproc) + ["/bin/sh", "-c", command]
        if not self.limits.disk_bytes:
            return run_process(self._prefix + limited, cwd=None, env={"PATH": ENV_PATH}, timeout=timeout, limits=self.limits)
        # The limits hold for the command only; the copy in and out around it runs unlimited (but as
        # the sandbox uid), so a command that used its whole file-size limit still comes back.
        with tempfile.TemporaryFile(prefix="envtrain-ws-") as tar, tempfile.TemporaryFile(prefix="envtrain-st-") as status:
            # Reopened by number through /proc (dash cannot redirect to an fd above 9); unlinked files,
            # opened for the sandbox uid, reachable only through these descriptors.
            fds = (tar.fileno(), status.fileno())
            for fd in fds:
                os.fchmod(fd, 0o666)
            closes = "".join(f" {fd}>&-" for fd in fds if 4 < fd <= 9)  # dash reads no fd above 9
            reopen = f"exec 3>/proc/self/fd/{fds[0]} 4>/proc/self/fd/{fds[1]}{closes}; "
            wrapper = ["/bin/sh", "-c", reopen + quota.WRAPPER, "sh", *limited]
            result = run_process(self._prefix + wrapper, cwd=None, env={"PATH": ENV_PATH}, timeout=timeout,
                                 limits=self.limits, pass_fds=fds)
            status.seek(0)
            why = TIMEOUT if result.timed_out else quota.verdict(status.read(4096).decode("ascii", "replace"), self.limits)
            if not why:
                tar.seek(0)
                try:
                    quota.unpack(tar.read(self.limits.disk_bytes + (1 << 20)), self.root, self.limits, owner=self._identity)
                except SandboxError as exc:
                    why = str(exc)
        return replace(result, exit_code=quota.exit_code(result.exit_code), discarded=why)

    def files(self) -> dict[str, str]:
        return read_back(self.root, self.limits).files

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> BwrapSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def available() -> str | None:
    """None when usable, else why not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install -y bubblewrap)"
    for tool in ("prlimit", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} (util-linux) is not installed"
    return None
