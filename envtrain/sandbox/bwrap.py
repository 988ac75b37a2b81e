"""The bubblewrap backend (the default on Linux): a throwaway mount, pid, net, ipc and uts
namespace per command over a host directory holding the workspace.

Inside: /usr (and the merged-usr links) and a few /etc files read-only, a fresh /proc and /dev,
a size-capped /tmp, the workspace at /workspace as the only writable host path, no network
(only a loopback in a new net namespace), a dropped uid, and the rlimits of ``Limits`` set by
prlimit after the uid drop. Killing bwrap's pid 1 (it dies with its parent, and the timeout
kills the whole process group) takes every process of the pid namespace with it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from envtrain.sandbox.base import Limits, RunResult, SandboxError, materialize, prlimit_argv, read_back, run_process
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
        argv += ["--bind", str(self.root), WORKDIR, "--chdir", WORKDIR, "--clearenv",
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
        return argv + prlimit_argv(self.limits, nproc=nproc_limit(self.limits, self._identity))

    def run(self, command: str, timeout: float = 10.0) -> RunResult:
        return run_process(self._prefix + ["/bin/sh", "-c", command], cwd=None, env={"PATH": ENV_PATH}, timeout=timeout, limits=self.limits)

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
