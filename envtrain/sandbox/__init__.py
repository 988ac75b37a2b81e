"""Sandboxes for workspace commands: one interface (``Sandbox``), three backends.

    with open_sandbox("bwrap", {"data/in.csv": "a,b\\n1,2\\n"}) as box:
        result = box.run("wc -l data/in.csv > out.txt", timeout=5)
        files = box.files()          # {"data/in.csv": ..., "out.txt": "2 data/in.csv\\n"}

``bwrap`` (default on Linux): namespaces, dropped uid, rlimits. ``docker``: a long-lived container
per workspace, network none, memory/pids limits, no capabilities. ``local``: rlimits only, NO
isolation. Backends are imported when opened, so ``import envtrain.sandbox`` pulls in no docker SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from envtrain.sandbox.base import Limits, RunResult, Sandbox, SandboxError

BACKENDS = ("bwrap", "docker", "local")
_CLASSES = {"bwrap": "envtrain.sandbox.bwrap:BwrapSandbox", "docker": "envtrain.sandbox.docker:DockerSandbox",
            "local": "envtrain.sandbox.local:LocalSandbox"}


def _module(backend: str) -> object:
    if backend not in _CLASSES:
        raise SandboxError(f"unknown sandbox backend {backend!r} (choose one of {', '.join(BACKENDS)})")
    return importlib.import_module(_CLASSES[backend].partition(":")[0])


def unavailable(backend: str) -> str | None:
    """None when the backend can run here, else one sentence saying why not."""
    return _module(backend).available()  # type: ignore[attr-defined, no-any-return]


def open_sandbox(backend: str, files: Mapping[str, str], limits: Limits = Limits()) -> Sandbox:
    module = _module(backend)
    why = module.available()  # type: ignore[attr-defined]
    if why is not None:
        raise SandboxError(f"sandbox backend {backend!r} is unavailable: {why}")
    cls = getattr(module, _CLASSES[backend].partition(":")[2])
    return cls(files, limits)  # type: ignore[no-any-return]


__all__ = ["BACKENDS", "Limits", "RunResult", "Sandbox", "SandboxError", "open_sandbox", "unavailable"]
