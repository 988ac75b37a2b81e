"""Each available backend: the workspace works, and hostile commands stay inside it."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from envtrain.sandbox import Sandbox, open_sandbox
from tests.sandbox.conftest import TEST_LIMITS


def test_runs_in_workspace_and_reads_back(box: Sandbox) -> None:
    result = box.run("cat data/in.txt && mkdir -p out && tr a-z A-Z < data/in.txt > out/up.txt && rm data/in.txt", timeout=10)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "hello\n"
    assert not result.timed_out
    assert box.files() == {"out/up.txt": "HELLO\n"}


def test_output_is_capped(box: Sandbox) -> None:
    result = box.run("head -c 1000000 /dev/zero | tr '\\0' x", timeout=10)
    assert result.truncated
    assert len(result.stdout) == 64 << 10


def test_links_are_not_read_back(box: Sandbox) -> None:
    box.run("ln -s /etc/hostname host.txt; ln -s /etc etcdir", timeout=10)
    assert set(box.files()) == {"data/in.txt"}


def test_runaway_command_killed_at_timeout(box: Sandbox) -> None:
    result = box.run("sleep 100", timeout=1)
    assert result.timed_out
    assert result.seconds < 5


def test_busy_loop_stopped(box: Sandbox) -> None:
    result = box.run("while :; do :; done", timeout=2)
    assert result.timed_out or result.exit_code != 0
    assert result.seconds < 6


def test_memory_hog_contained(box: Sandbox) -> None:
    result = box.run("python3 -c 'x = bytearray(2 << 30); print(len(x))'", timeout=20)
    assert result.exit_code != 0
    assert "2147483648" not in result.stdout
    assert box.run("echo alive", timeout=10).stdout == "alive\n"


def test_fork_bomb_contained(box: Sandbox) -> None:
    result = box.run(":(){ :|:& };:; sleep 2", timeout=6)
    assert result.seconds < 15
    # The host (and the sandbox afterwards) can still start processes.
    assert box.run("echo alive", timeout=10).stdout == "alive\n"


def test_no_network(isolated_box: Sandbox) -> None:
    # A server on the host's loopback: an isolated command must not reach it (its own loopback is empty).
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted: list[bool] = []
    threading.Thread(target=lambda: (server.settimeout(6), _accept(server, accepted)), daemon=True).start()
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')"
    result = isolated_box.run(f"python3 -c \"{code}\"", timeout=10)
    assert "connected" not in result.stdout and result.exit_code != 0
    outside = isolated_box.run("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3); print('connected')\"", timeout=10)
    assert "connected" not in outside.stdout
    devices = isolated_box.run("cat /proc/net/dev", timeout=10).stdout
    assert [line.split(":")[0].strip() for line in devices.splitlines()[2:]] in ([], ["lo"])
    server.close()
    assert not accepted


def _accept(server: socket.socket, accepted: list[bool]) -> None:
    try:
        server.accept()
        accepted.append(True)
    except OSError:
        pass


def test_no_write_outside_workspace_and_host_unchanged(isolated_box: Sandbox) -> None:
    canary_dir = Path(tempfile.mkdtemp(prefix="envtrain-canary-"))
    canary = canary_dir / "keep.txt"
    canary.write_text("untouched\n")
    os.chmod(canary_dir, 0o777)
    os.chmod(canary, 0o666)  # world-writable on the host: only the mount layout can protect it
    before = _host_state(canary_dir)
    hostile = "; ".join([
        "touch /usr/envtrain-pwned", "touch /etc/envtrain-pwned", "touch /envtrain-pwned",
        f"echo pwned > {canary}", f"rm -rf {canary_dir}", "rm -rf /tmp/envtrain-canary-*",
        "chmod 777 /usr/bin/env", "echo pwned >> /etc/passwd", "mount -t tmpfs none /usr",
        "echo done",
    ])
    result = isolated_box.run(hostile, timeout=20)
    assert "done" in result.stdout
    assert _host_state(canary_dir) == before
    assert canary.read_text() == "untouched\n"
    for path in ("/usr/envtrain-pwned", "/etc/envtrain-pwned", "/envtrain-pwned"):
        assert not os.path.exists(path)
    canary.unlink()
    canary_dir.rmdir()


def test_runs_as_unprivileged_user(isolated_box: Sandbox) -> None:
    result = isolated_box.run("id -u; grep CapEff /proc/self/status", timeout=10)
    uid, caps = result.stdout.split("\n", 1)
    assert int(uid) != 0
    assert caps.split()[1] == "0000000000000000"


def _host_state(canary_dir: Path) -> tuple[object, ...]:
    env = Path("/usr/bin/env").stat()
    return (canary_dir.exists(), sorted(os.listdir(canary_dir)), env.st_mode, Path("/etc/passwd").read_text())


def test_disk_filler_is_contained_reported_and_dropped(backend: str) -> None:
    # Many files, each under the file-size limit: only the workspace quota stops them.
    limits = replace(TEST_LIMITS, disk_bytes=4 << 20)
    with open_sandbox(backend, {"data/in.txt": "hello\n"}, limits) as box:
        assert box.run("echo kept > kept.txt", timeout=10).ok
        filler = "i=0; while [ $i -lt 400 ]; do head -c 1000000 /dev/zero > fill$i || break; i=$((i+1)); done; echo wrote $i"
        result = box.run(filler, timeout=20)
        assert result.disk_full and result.discarded == "disk full" and not result.ok
        # Stopped near 4 MB, not at 400 MB: by the kernel (a tmpfs refuses the write) or killed by local's watch.
        assert not result.stdout or int(result.stdout.split()[-1]) <= 5
        assert box.files() == {"data/in.txt": "hello\n", "kept.txt": "kept\n"}  # the workspace as it was
        assert box.run("echo alive > after.txt", timeout=10).ok  # and still usable
        assert box.files()["after.txt"] == "alive\n"


def test_timed_out_command_keeps_nothing(backend: str) -> None:
    with open_sandbox(backend, {"data/in.txt": "hello\n"}, TEST_LIMITS) as box:
        result = box.run("echo partial > partial.txt; sleep 30", timeout=1)
        assert result.timed_out and result.discarded == "timeout"
        assert box.files() == {"data/in.txt": "hello\n"}


def test_quota_zero_writes_straight_through(backend: str) -> None:
    with open_sandbox(backend, {"data/in.txt": "hello\n"}, replace(TEST_LIMITS, disk_bytes=0)) as box:
        assert box.run("echo x > out.txt", timeout=10).ok
        assert box.files() == {"data/in.txt": "hello\n", "out.txt": "x\n"}
