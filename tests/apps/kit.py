"""What the app tests share: a runtime over one app and a world, sessions on it, calls, row look-ups, refusals.

    ROWS = {"crm.accounts": [...], ...}
    runtime, session = app_fixtures("crm", ROWS, persona=ME, base_time=NOW)  # module-scoped runtime, fresh session per test

    def test_x(session):
        assert call(session, "get_account", account_id=1).ok
        assert row(session, "crm.accounts", 1)["owner"] == ME
        refused(session, "get_deal", ErrorKind.NOT_FOUND, "No deal 99.", deal_id=99)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from envtrain.apps import load_app
from envtrain.core import Environment, ErrorKind, Runtime, Session, StepResult

Row = dict[str, Any]
Fixture = Callable[..., Any]


def app_runtime(app: str, tables: Mapping[str, list[Row]] | None = None, *, persona: str | None = None,
                base_time: str | None = None, files: Mapping[str, str] | None = None,
                verifier: Mapping[str, Any] | None = None) -> Runtime:
    """A runtime over one built-in app with W0 = ``tables`` (and ``files``), acting as the persona ``{"email": persona}``.

    No request or reference solution, and unless ``verifier`` is given a placeholder one (some row of the first
    table, or of ``files``): the app tests drive tools and read rows, they never verify.
    """
    tables = dict(tables or {})
    world: dict[str, Any] = {"tables": tables}
    if base_time is not None:
        world["base_time"] = base_time
    if files is not None:
        world["files"] = dict(files)
    return Runtime(Environment.parse({
        "apps": [load_app(app)],
        "world": world,
        "request": "test",
        "persona": {} if persona is None else {"email": persona},
        "verifier": verifier if verifier is not None else {"positive": [{"entity": next(iter(tables), "files")}]},
        "reference_solution": [],
    }))


@contextmanager
def open_session(runtime: Runtime) -> Iterator[Session]:
    """A session reset to W0, closed on leaving the block."""
    with runtime.session() as s:
        s.reset()
        yield s


def app_fixtures(app: str, tables: Mapping[str, list[Row]] | None = None, **options: Any) -> tuple[Fixture, Fixture]:
    """The ``runtime`` (module-scoped, :func:`app_runtime` of the arguments) and ``session`` (one fresh session a test) fixtures.

    Bind both in the test module under those names: ``runtime, session = app_fixtures("mail", ROWS, persona=ME, base_time=NOW)``.
    """

    @pytest.fixture(scope="module")
    def runtime() -> Runtime:
        return app_runtime(app, tables, **options)

    @pytest.fixture
    def session(runtime: Runtime) -> Iterator[Session]:
        with open_session(runtime) as s:
            yield s

    return runtime, session


def call(session: Session, tool: str, /, **args: Any) -> StepResult:
    """One step: ``tool`` with ``args`` as its arguments (any names, ``tool`` and ``session`` included)."""
    return session.step({"tool": tool, "arguments": args})


def rows(session: Session, entity: str, /, **match: Any) -> list[Row]:
    """The rows of ``entity`` (qualified, ``app.entity``) whose columns equal every ``match`` value, in key order."""
    return [r for r in session.world.rows(entity) if all(r[k] == v for k, v in match.items())]


def row(session: Session, entity: str, key_value: Any, key: str = "id") -> Row:
    """The first row of ``entity`` whose ``key`` column equals ``key_value``; fails the test when there is none."""
    found = next((r for r in session.world.rows(entity) if r[key] == key_value), None)
    assert found is not None, f"no {entity} row with {key} = {key_value!r}"
    return found


def refused(session: Session, tool: str, kind: ErrorKind, fragment: str, /, **args: Any) -> StepResult:
    """Call ``tool`` and assert it is refused with error ``kind``, ``fragment`` in the message, and the world unchanged.

    Positional-only, so the tool's own arguments may be called ``kind`` or ``fragment``. Returns the result.
    """
    before = session.world.content_hash()
    r = call(session, tool, **args)
    assert (r.ok, r.error) == (False, kind), r.message
    assert fragment in r.message
    assert session.world.content_hash() == before
    return r
