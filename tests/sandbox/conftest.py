"""One fixture per sandbox backend; a backend missing here skips its tests with the reason."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from envtrain.sandbox import BACKENDS, Limits, Sandbox, open_sandbox, unavailable

# Small limits so that the hostile commands are stopped fast and cheaply.
TEST_LIMITS = Limits(cpu_seconds=5, memory_bytes=512 << 20, file_bytes=4 << 20, processes=32)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    why = unavailable(request.param)
    if why is not None:
        pytest.skip(f"{request.param}: {why}")
    return str(request.param)


@pytest.fixture
def box(backend: str) -> Iterator[Sandbox]:
    with open_sandbox(backend, {"data/in.txt": "hello\n"}, TEST_LIMITS) as sandbox:
        yield sandbox


@pytest.fixture
def isolated_box(box: Sandbox) -> Sandbox:
    if not box.isolated:
        pytest.skip(f"{box.backend}: provides no isolation (by design)")
    return box
