"""Checker scripts in the sandbox (``shell.check``) and generated tools run as code (``shell.call``)."""

from __future__ import annotations

import json

import pytest

from envtrain.sandbox import Limits
from envtrain.sandbox.checker import CheckCache, parse_verdict, run_check
from envtrain.sandbox.codecall import invoke

FILES = {"out/answer.json": '{"total": 42}\n'}
READS = "import json\ngot = json.load(open('out/answer.json'))\nprint(json.dumps({'pass': got['total'] == 42, 'score': 1.0}))\n"


@pytest.mark.parametrize("stdout, expected", [
    ('noise\n{"pass": true}\n', {"pass": True, "score": 1.0, "detail": ""}),
    ('{"pass": false, "score": 0.5, "detail": "1 of 2"}', {"pass": False, "score": 0.5, "detail": "1 of 2"}),
    ('{"pass": true, "score": 7}', {"pass": True, "score": 1.0, "detail": ""}),  # a score outside 0-1 is not believed
    ('{"pass": "yes"}', {"pass": False, "score": 0.0, "detail": 'the script\'s last line is not {"pass": true|false, ...}'}),
    ("", {"pass": False, "score": 0.0, "detail": 'the script\'s last line is not {"pass": true|false, ...}'}),
])
def test_verdict_line(stdout: str, expected: dict) -> None:
    assert parse_verdict(stdout) == expected


def test_check_reads_the_workspace_and_keeps_nothing(backend: str) -> None:
    assert run_check(FILES, READS, backend)["pass"] is True
    assert run_check({"out/answer.json": '{"total": 41}'}, READS, backend)["pass"] is False
    # It does not see itself among the files, and what it writes goes nowhere.
    lister = "import json, os\nprint(json.dumps({'pass': sorted(os.listdir('.')) == ['out'], 'detail': str(os.listdir('.'))}))\n"
    assert run_check(FILES, lister, backend) == {"pass": True, "score": 1.0, "detail": "['out']"}


def test_check_failures_are_failed_checks(backend: str) -> None:
    crash = run_check(FILES, "raise SystemExit('broken checker')", backend)
    assert crash == {"pass": False, "score": 0.0, "detail": "the script failed: broken checker"}
    hang = run_check(FILES, "while True: pass", backend, Limits(cpu_seconds=30), timeout=1)
    assert hang["pass"] is False and "ran past 1 s" in hang["detail"]
    assert run_check(FILES, "", backend)["detail"] == "the check has no script"


def test_cache_runs_each_question_once() -> None:
    cache = CheckCache(size=2)
    for _ in range(3):
        assert cache.run(FILES, READS, "local", Limits())["pass"]
    assert cache.runs == 1
    cache.run({"out/answer.json": '{"total": 1}'}, READS, "local", Limits())
    cache.run({}, READS, "local", Limits())
    cache.run(FILES, READS, "local", Limits())  # pushed out by the two above: asked again
    assert cache.runs == 4


TOOLS = '''import json, os
def add(ctx, args):
    if "n" not in args:
        return {"error": {"kind": "missing_field", "message": "missing required field 'n'"}}
    state = json.load(open("state/session.json"))
    state["total"] += args["n"]
    open("state/.tmp", "w").write(json.dumps(state))
    os.replace("state/.tmp", "state/session.json")
    return {"total": state["total"], "at": ctx["now"]}
def boom(ctx, args):
    raise RuntimeError("kaput")
def vandal(ctx, args):
    open("data/x.txt", "w").write("changed")
    return {}
'''
APP = {"app/tools.py": TOOLS, "state/session.json": '{"total": 1}', "data/x.txt": "original"}


def _call(tool: str, args: dict, backend: str):
    return invoke(APP, tool, args, base_time="2026-01-01T00:00:00Z", action_index=3, now="2026-01-01T00:00:03Z", backend=backend)


def test_code_call_runs_a_tool_and_reports_its_changes(backend: str) -> None:
    inv = _call("add", {"n": 2}, backend)
    assert inv.violation is None and inv.result == {"total": 3, "at": "2026-01-01T00:00:03Z"}
    assert json.loads(inv.changed["state/session.json"]) == {"total": 3} and inv.deleted == ()
    assert _call("add", {}, backend).error == {"kind": "missing_field", "message": "missing required field 'n'"}


def test_code_call_names_the_broken_rule(backend: str) -> None:
    assert _call("boom", {}, backend).violation == (1, "boom raised RuntimeError: kaput instead of returning a structured error")
    assert _call("vandal", {}, backend).violation == (3, "vandal wrote data/x.txt, which is read-only")
    assert _call("nothing", {}, backend).violation == (0, "app/tools.py defines no function 'nothing'")
