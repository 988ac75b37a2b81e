"""Every shipped example environment loads, replays and passes admission."""

from __future__ import annotations

from pathlib import Path

import pytest

from envtrain.apps import builtin_app_names, load_app
from envtrain.core import Environment, Runtime
from envtrain.core.admission import check_admission

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_is_admitted(path: Path) -> None:
    report = check_admission(Environment.load(path))
    assert report.admitted, [f.to_dict() for f in report.failures]


def test_every_builtin_app_is_covered_by_an_example() -> None:
    used = {app.name for path in EXAMPLES for app in Environment.load(path).apps}
    assert used == set(builtin_app_names())


@pytest.mark.parametrize("name", builtin_app_names())
def test_builtin_app_is_a_usable_server_atom(name: str) -> None:
    app = load_app(name)
    writes = [t for t in app.tools if t.writes]
    assert len(app.tools) >= 6 and len(writes) >= 3 and len(app.tools) > len(writes)
    assert app.capabilities, "a capability card maps operation kinds to tools"
    for tool in app.tools:
        for guard in tool.preconditions:
            assert guard.message.strip(), f"{tool.name}: a precondition needs the refusal the agent sees"
    # Every app compiles on its own against an empty world.
    Runtime(Environment.parse({"apps": [name], "request": "r", "verifier": {"positive": [{"entity": "files"}]}, "reference_solution": []}))


def test_at_least_twelve_apps() -> None:
    assert len(builtin_app_names()) >= 12
