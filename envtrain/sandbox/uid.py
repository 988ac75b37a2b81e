"""Which uid a sandboxed command runs as, and the process limit that then means something.

RLIMIT_NPROC counts every process of the command's *real* uid on the host, and the kernel does
not apply it to root at all. So as root every command drops to a uid of its own, drawn from a
range no login uses (two sandboxes never share a process budget); as an ordinary user the
command keeps the caller's uid and the limit is set above what the caller already runs.
"""

from __future__ import annotations

import os
import secrets

from envtrain.sandbox.base import Limits

UID_BASE = 200_000  # above any login uid, below the 2^31 that user namespaces allow
UID_SPAN = 100_000


def dropped_identity() -> tuple[int, int] | None:
    """(uid, gid) for a new sandbox when running as root; None otherwise (keep the caller's)."""
    if os.geteuid() != 0:
        return None
    uid = UID_BASE + secrets.randbelow(UID_SPAN)
    return uid, uid


def processes_of(uid: int) -> int:
    """Tasks (threads included, as RLIMIT_NPROC counts them) the uid runs now."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))  # the limit counts threads
            except OSError:
                continue
    return count


def nproc_limit(limits: Limits, identity: tuple[int, int] | None) -> int:
    if identity is not None:
        return limits.processes
    return processes_of(os.getuid()) + limits.processes
