"""The workspace's disk quota: a command writes into a size-capped copy, and only a command that
finished inside its limits has its copy taken back as the workspace.

bwrap and docker hold the copy in a tmpfs of ``Limits.disk_bytes``: the kernel refuses the write
that would pass it (``No space left on device``), so a command cannot fill the host's disk, and
the host never holds more than the quota. The committed workspace is a host folder, bound
read-only at ``SEED`` and copied into the tmpfs before the command; after it, the tmpfs comes
back as a tar stream and replaces the folder's contents. The local backend (no isolation) copies
the folder, watches the copy's size while the command runs and kills it past the quota.

A command that times out, fills its quota, or leaves a workspace that cannot be read back changes
nothing: ``RunResult.discarded`` says why.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
import tempfile
from pathlib import Path

from envtrain.sandbox.base import DISK_FULL, Limits, SandboxError, check_path

SEED = "/.workspace-seed"  # where the committed workspace is bound, read-only, inside the sandbox
WORKDIR = "/workspace"
FULL_SLACK = 64 << 10  # a tmpfs with less than this left counts as full (pages are 4 KiB)
COPY_IN = f"find {SEED} -mindepth 1 -maxdepth 1 -exec cp -a -t {WORKDIR} {{}} +"  # cp -a of "." would touch the mount's own times
STATUS = f'stat -f -c "free %a %S" {WORKDIR}'
# Run inside bwrap as the sandbox uid: "$@" is the limited command. fd 3 takes the workspace as tar,
# fd 4 a status line; the command gets neither.
WRAPPER = f"""{COPY_IN} || {{ echo seed >&4; exit 125; }}
cd {WORKDIR} && "$@" 3>&- 4>&-
rc=$?
{STATUS} >&4
tar -C {WORKDIR} -cf - . >&3 || echo tar >&4
exit $rc
"""


def verdict(status: str, limits: Limits) -> str:
    """Why the workspace after a command must be dropped, from the wrapper's status; "" to keep it."""
    free = next((line.split()[1:] for line in status.splitlines() if line.startswith("free ")), None)
    if free is None:
        return "the command's workspace could not be read back (its copy did not finish)"
    if int(free[0]) * int(free[1]) < FULL_SLACK:
        return DISK_FULL
    if "tar" in status.split():
        return "the command's workspace could not be read back"
    return ""


def exit_code(raw: int) -> int:
    """A shell's 128+N (killed by signal N) as subprocess reports it, -N."""
    return -(raw - 128) if 128 < raw < 160 else raw


def unpack(data: bytes | Path, root: Path, limits: Limits, *, owner: tuple[int, int] | None) -> None:
    """Replace ``root``'s contents with the tar's regular files and folders (links and devices are
    dropped, paths outside refused). Read whole first, so a refused tar leaves ``root`` as it was;
    ``root`` itself stays the same directory (docker binds it)."""
    folders: list[str] = []
    files: list[tuple[str, bytes, bool]] = []
    try:
        total = 0
        with tarfile.open(fileobj=io.BytesIO(data) if isinstance(data, bytes) else None, name=None if isinstance(data, bytes) else data) as tar:
            for member in tar:
                if member.name in (".", "./"):
                    continue
                rel = check_path(member.name)
                if member.isdir():
                    folders.append(rel)
                elif member.isreg():  # links, fifos, devices: not workspace text
                    total += member.size
                    if total > limits.max_workspace_bytes or len(files) >= limits.max_workspace_files:
                        raise SandboxError(f"the workspace grew past {limits.max_workspace_bytes} bytes or {limits.max_workspace_files} files")
                    source = tar.extractfile(member)
                    assert source is not None
                    files.append((rel, source.read(), bool(member.mode & stat.S_IXUSR)))
    except (tarfile.TarError, OSError) as exc:
        raise SandboxError(f"the command's workspace could not be read back: {exc}") from None
    try:
        for child in list(root.iterdir()):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        for rel in folders:
            (root / rel).mkdir(parents=True, exist_ok=True)
        for rel, content, executable in files:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            os.chmod(target, 0o755 if executable else 0o644)
        if owner is not None:
            for dirpath, dirnames, filenames in os.walk(root):
                for name in (dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)):
                    os.lchown(name, *owner)
    except OSError as exc:  # only a tar not made by the wrapper (a file where a folder is) gets here
        raise SandboxError(f"the command's workspace could not be read back: {exc}") from None


def tree_bytes(root: Path, stop_at: int) -> int:
    """Bytes under root (files' sizes, links not followed), counting stopped once past ``stop_at``."""
    total = 0
    stack = [str(root)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(entry.path)
            else:
                total += st.st_blocks * 512  # what the disk holds: a sparse file costs its written pages
            if total > stop_at:
                return total
    return total


def copy_tree(source: Path, prefix: str, *, owner: tuple[int, int] | None) -> Path:
    """A scratch copy of the workspace (links copied as links) beside it, handed to ``owner``."""
    target = Path(tempfile.mkdtemp(prefix=prefix, dir=source.parent))
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    if owner is not None:
        for dirpath, dirnames, filenames in os.walk(target):
            for name in (dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)):
                os.lchown(name, *owner)
    return target
