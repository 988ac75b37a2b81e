"""The workspace app: file tools over the world's files entity; paths stay inside; every refusal; reads."""

from __future__ import annotations

import pytest

from envtrain.apps import load_app
from envtrain.core import ErrorKind

from .kit import app_fixtures, call, refused

NF, DENIED, STUCK = ErrorKind.NOT_FOUND, ErrorKind.PERMISSION_DENIED, ErrorKind.INVALID_TRANSITION

FILES = {
    "policies/travel.md": "# Travel policy\nEconomy class only.\nHotels up to 180 EUR a night.\n",
    "reports/2026-02.md": "total: 4\n",
    "notes/todo.txt": "call the hotel\n",
}


runtime, session = app_fixtures("workspace", files=FILES)


def test_the_app_owns_no_entity_and_reads_are_not_writes():
    app = load_app("workspace")
    assert app.entities == {}
    assert sorted(t.name for t in app.tools if t.writes) == ["append_file", "delete_file", "move_file", "write_file"]
    assert all(t.handler and t.handler.startswith("files.") for t in app.tools)


def test_write_append_move_delete_change_the_files_entity(session):
    r = call(session, "write_file", path="reports/2026-03.md", content="total: 3\n")
    assert r.ok and r.output == {"path": "reports/2026-03.md", "written": 9, "replaced": False}
    assert call(session, "append_file", path="reports/2026-03.md", content="sev1: 1\n").ok
    assert call(session, "write_file", path="notes/todo.txt", content="done\n", overwrite=True).output["replaced"] is True
    assert call(session, "move_file", source="reports/2026-02.md", target="reports/archive/2026-02.md").ok
    # A leading / is the workspace root.
    assert call(session, "delete_file", path="/notes/todo.txt").output == {"deleted": "notes/todo.txt"}
    assert session.world.files() == {
        "policies/travel.md": FILES["policies/travel.md"],
        "reports/2026-03.md": "total: 3\nsev1: 1\n",
        "reports/archive/2026-02.md": "total: 4\n",
    }
    # Verifier assertions see the same rows.
    where = ("path = 'reports/2026-03.md'", "content contains 'total: 3'")
    assert session.runtime.condition_count(session.world, "files", where) == 1


REFUSALS = [
    ("read_file", dict(path="../etc/passwd"), DENIED, "outside the workspace"),
    ("write_file", dict(path="../etc/passwd", content="x"), DENIED, "outside the workspace"),
    ("write_file", dict(path="notes/../../secrets.txt", content="x"), DENIED, "outside the workspace"),
    ("move_file", dict(source="notes/todo.txt", target="../todo.txt"), DENIED, "outside the workspace"),
    ("write_file", dict(path="notes/todo.txt", content="x"), STUCK, "'notes/todo.txt' exists; pass overwrite=true"),
    ("write_file", dict(path="notes/todo.txt", content="x", overwrite=False), STUCK, "pass overwrite=true"),
    ("read_file", dict(path="notes/missing.txt"), NF, "no file 'notes/missing.txt'"),
    ("delete_file", dict(path="notes/missing.txt"), NF, "no file 'notes/missing.txt'"),
    ("move_file", dict(source="notes/missing.txt", target="notes/x.txt"), NF, "no file 'notes/missing.txt'"),
    ("move_file", dict(source="notes/todo.txt", target="reports/2026-02.md"), STUCK, "'reports/2026-02.md' already exists"),
    ("write_file", dict(path="notes/a.txt"), ErrorKind.MISSING_FIELD, "content"),
]


@pytest.mark.parametrize("tool, args, kind, detail", REFUSALS, ids=[f"{r[0]}-{r[2].value}-{i}" for i, r in enumerate(REFUSALS)])
def test_refusals_name_the_problem_and_change_nothing(session, runtime, tool, args, kind, detail):
    refused(session, tool, kind, detail, **args)
    assert session.world.content_hash() == runtime.w0_hash


def test_reads(session):
    travel = call(session, "read_file", path="policies/travel.md").output
    assert travel == {"path": "policies/travel.md", "content": FILES["policies/travel.md"]}
    listed = call(session, "list_files", prefix="reports/").output["items"]
    assert listed == [{"path": "reports/2026-02.md", "size": 9}]
    everything = call(session, "list_files").output["items"]
    assert [f["path"] for f in everything] == ["notes/todo.txt", "policies/travel.md", "reports/2026-02.md"]
    hits = call(session, "search_files", query="HOTEL").output["items"]
    assert hits == [{"path": "notes/todo.txt", "lines": ["1: call the hotel"]},
                    {"path": "policies/travel.md", "lines": ["3: Hotels up to 180 EUR a night."]}]
