"""The docker backend (production): one long-lived container per workspace, driven by the SDK.

The container: no network, memory and pids limits, every capability dropped, no-new-privileges,
a read-only root with a size-capped /tmp, an unprivileged uid of its own. The workspace is a
tmpfs of ``Limits.disk_bytes`` at /workspace; the committed copy is a host folder bound read-only
at ``quota.SEED``. Each command is an ``exec`` wrapped in prlimit for CPU time and file size; a
second exec hands the tmpfs back as a tar, which replaces the host folder when the command ended
inside its limits; otherwise the tmpfs is refilled from the folder. At the wall-clock timeout
every process of the container's uid is killed (pid 1, the container's ``sleep``, cannot be). No
ulimits are requested from the daemon: asking for more than the host's makes the start fail.
With ``disk_bytes=0`` the host folder itself is bound at /workspace (no quota).

The image is built locally by ``scripts/ci_docker.sh``; nothing is pulled.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from envtrain.sandbox import quota
from envtrain.sandbox.base import TIMEOUT, Limits, RunResult, SandboxError, materialize, read_back
from envtrain.sandbox.uid import UID_BASE, UID_SPAN

IMAGE = "envtrain/sandbox:1"
WORKDIR = "/workspace"


class DockerSandbox:
    backend = "docker"
    isolated = True

    def __init__(self, files: Mapping[str, str], limits: Limits = Limits(), *, image: str = IMAGE) -> None:
        import secrets

        import docker  # the docker extra; imported only when a docker sandbox is opened

        self.limits = limits
        self.client = docker.from_env()
        self.root = Path(tempfile.mkdtemp(prefix="envtrain-docker-"))
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        self.user = f"{uid}:{uid}"
        materialize(self.root, files, owner=(uid, uid) if _is_root() else None)
        self._owner = (uid, uid) if _is_root() else None
        tmpfs = {"/tmp": "rw,nosuid,nodev,size=64m"}
        if limits.disk_bytes:
            tmpfs[WORKDIR] = f"rw,nosuid,nodev,size={limits.disk_bytes},mode=1777"
            volumes = {str(self.root): {"bind": quota.SEED, "mode": "ro"}}
        else:
            volumes = {str(self.root): {"bind": WORKDIR, "mode": "rw"}}
        start = time.perf_counter()
        try:
            self.container = self.client.containers.run(
                image, ["sleep", "infinity"], detach=True, auto_remove=False, network_mode="none",
                mem_limit=limits.memory_bytes, memswap_limit=limits.memory_bytes, pids_limit=limits.processes,
                cap_drop=["ALL"], security_opt=["no-new-privileges"], read_only=True,
                tmpfs=tmpfs, user=self.user, working_dir=WORKDIR,
                volumes=volumes, environment={"HOME": WORKDIR, "LANG": "C.UTF-8"},
                labels={"envtrain.sandbox": "1"},
            )
            if limits.disk_bytes:
                self._refill()
        except Exception as exc:
            self.close()
            raise SandboxError(f"docker could not start a sandbox container from {image}: {exc}") from None
        self.start_seconds = time.perf_counter() - start

    def _refill(self) -> None:
        """The tmpfs workspace back to the committed copy."""
        code, output = self.container.exec_run(["/bin/sh", "-c", f"find {WORKDIR} -mindepth 1 -delete; {quota.COPY_IN}"], user=self.user)
        if code != 0:
            raise SandboxError(f"the workspace could not be copied into the container: {output[-300:]!r}")

    def _settle(self, result: RunResult) -> RunResult:
        """Keep the tmpfs as the workspace, or drop it, after a command (see envtrain.sandbox.quota)."""
        why = TIMEOUT if result.timed_out else ""
        if not why:
            _, (tar, status) = self.container.exec_run(["/bin/sh", "-c", f"{quota.STATUS} >&2; tar -C {WORKDIR} -cf - . || echo tar >&2"],
                                                          user=self.user, demux=True)
            why = quota.verdict((status or b"").decode("ascii", "replace"), self.limits)
            if not why:
                try:
                    quota.unpack(tar or b"", self.root, self.limits, owner=self._owner)
                except SandboxError as exc:
                    why = str(exc)
        if why:
            self._refill()
        return replace(result, discarded=why)

    def run(self, command: str, timeout: float = 10.0) -> RunResult:
        lim = self.limits
        wrapped = (f"exec prlimit --cpu={lim.cpu_seconds} --fsize={lim.file_bytes} --nofile={lim.open_files} --core=0 "
                   f"-- /bin/sh -c {shlex.quote(command)}")
        api = self.client.api
        exec_id = api.exec_create(self.container.id, ["/bin/sh", "-c", wrapped], user=self.user, workdir=WORKDIR)["Id"]
        out, err = bytearray(), bytearray()
        cap = lim.max_output_bytes
        truncated = [False]

        def pump() -> None:
            for chunk_out, chunk_err in api.exec_start(exec_id, stream=True, demux=True):
                for buf, chunk in ((out, chunk_out), (err, chunk_err)):
                    if chunk:
                        room = cap + 1 - len(buf)
                        if room > 0:
                            buf.extend(chunk[:room])
                        if len(buf) > cap:
                            truncated[0] = True

        start = time.perf_counter()
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        reader.join(timeout)
        timed_out = reader.is_alive()
        if timed_out:
            # kill -1 as the container's uid: every process it may signal, which excludes pid 1.
            self.container.exec_run(["/bin/sh", "-c", "kill -KILL -1"], user=self.user)
            reader.join(5)
        code = api.exec_inspect(exec_id).get("ExitCode")
        seconds = time.perf_counter() - start
        exit_code = -9 if timed_out or code is None else int(code)
        if code is not None and code >= 128 and not timed_out:
            exit_code = -(code - 128)  # the shell's "killed by signal N", as subprocess reports it
        result = RunResult(exit_code, bytes(out[:cap]).decode("utf-8", "replace"), bytes(err[:cap]).decode("utf-8", "replace"),
                           timed_out, seconds, truncated[0])
        return self._settle(result) if lim.disk_bytes else result

    def files(self) -> dict[str, str]:
        return read_back(self.root, self.limits).files

    def close(self) -> None:
        container = getattr(self, "container", None)
        if container is not None:
            try:
                container.remove(force=True)
            except Exception:
                pass  # already gone; the workspace is still removed
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_root() -> bool:
    import os

    return os.geteuid() == 0


def available(image: str = IMAGE) -> str | None:
    """None when usable, else why not."""
    try:
        import docker
    except ImportError:
        return "the docker SDK is not installed (pip install 'envtrain[docker]')"
    try:
        client: Any = docker.from_env(timeout=5)
        client.ping()
    except Exception:
        return "no docker daemon answers (start dockerd; scripts/ci_docker.sh does)"
    try:
        client.images.get(image)
    except Exception:
        return f"image {image} is not built (scripts/ci_docker.sh builds it locally)"
    return None
