"""EnvCraft Table 15 for generated code: one planted violation per rule, caught and named,
statically; and the violations only running the code shows, caught by the sandbox probe."""

from __future__ import annotations

import pytest

from envtrain.sandbox import unavailable
from envtrain.synth.catalogue import load_catalogue, select
from envtrain.synth.codegen.document import build_environment, parse_answer
from envtrain.synth.codegen.probe import probe
from envtrain.synth.codegen.rules import check_checker, check_tools
from tests.synth.kit import CHECK, GOOD_CODE, HIDDEN, answer_text, hidden, planted

BACKEND = "bwrap" if unavailable("bwrap") is None else "local"
TOOLS = ("list_reports", "get_receipt", "approve_report", "reject_report")


def test_compliant_code_passes() -> None:
    assert check_tools(GOOD_CODE, TOOLS) == [] and check_checker(CHECK) == []


@pytest.mark.parametrize("rule", [1, 2, 3, 4, 5, 6])
def test_each_planted_violation_is_named(rule: int) -> None:
    violations = check_tools(planted(rule), TOOLS)
    assert [v.rule for v in violations] == [rule], [str(v) for v in violations]
    assert str(violations[0]).startswith(f"Table 15 rule {rule} (")


@pytest.mark.parametrize("snippet, rule, words", [
    ("def tool(ctx, args):\n    raise ValueError('no')\n", 1, "raises instead"),
    ("def tool(ctx, args):\n    return {'error': {'kind': 'oops', 'message': 'x'}}\n", 1, "error kind 'oops'"),
    ("def tool(ctx, args):\n    global N\n    return {}\n", 2, "global N"),
    ("import functools\n@functools.lru_cache\ndef tool(ctx, args):\n    return {}\n", 2, "memoizing"),
    ("def tool(ctx, args, seen=[]):\n    return {}\n", 2, "mutable default"),
    ("import os\ndef tool(ctx, args):\n    p = os.path.join(ctx['data_dir'], 'x')\n    os.remove(p)\n    return {}\n", 3, "under data/"),
    ("from pathlib import Path\ndef tool(ctx, args):\n    Path('state/out.json').write_text('{}')\n    return {}\n", 4, "in place"),
    ("import fcntl\ndef tool(ctx, args):\n    fcntl.lockf(open('state/session.lock'), fcntl.LOCK_EX)\n    return {}\n", 5, "no bound"),
    ("import time\ndef tool(ctx, args):\n    return {'at': time.time()}\n", 6, "time.time()"),
    ("from time import time as now\ndef tool(ctx, args):\n    return {'at': now()}\n", 6, "wall clock"),
    ("import datetime\ndef tool(ctx, args):\n    return {'at': str(datetime.date.today())}\n", 6, "date.today()"),
])
def test_more_violations(snippet: str, rule: int, words: str) -> None:
    violations = check_tools(snippet, ("tool",))
    assert any(v.rule == rule and words in str(v) for v in violations), [str(v) for v in violations]


def test_allowed_forms_are_not_flagged() -> None:
    code = ("import fcntl, json, os, time\nKINDS = ('a', 'b')\n"
            "def tool(ctx, args):\n    deadline = time.monotonic() + 2\n    with open(os.path.join(ctx['data_dir'], 'x.json')) as fh:\n"
            "        data = json.load(fh)\n    return {'data': data, 'at': ctx['now'], 'merged': {**data} | {}}\n")
    assert check_tools(code, ("tool",)) == []


def test_contract_errors() -> None:
    assert "does not parse" in str(check_tools("def tool(ctx, args)\n", ("tool",))[0])
    assert [str(v) for v in check_tools("def tool(ctx):\n    return {}\n", ("tool", "other"))] == [
        "Table 15 rule 0 (the tool contract): other: declared as a tool but not defined as a module-level function",
        "Table 15 rule 0 (the tool contract): tool (line 1): a tool takes exactly (ctx, args)"]
    assert [v.rule for v in check_checker("import datetime\nprint(datetime.datetime.now())\n")] == [6]


def _env(code: str):
    card = select(load_catalogue(), "claw-12")[0]
    return build_environment(parse_answer(answer_text(code=code)), card)


def test_probe_passes_compliant_code() -> None:
    report = probe(_env(GOOD_CODE), BACKEND)
    assert report.ok, report
    assert report.calls == 12  # 3 missing-field calls, the solution twice, the lock probe


@pytest.mark.parametrize("rule", sorted(HIDDEN))
def test_probe_catches_what_reading_cannot(rule: int) -> None:
    code = hidden(rule)
    assert check_tools(code, TOOLS) == []  # invisible to the reading
    report = probe(_env(code), BACKEND)
    assert [v.rule for v in report.violations] == [rule], [str(v) for v in report.violations]


def test_probe_wants_missing_field_errors_naming_the_field() -> None:
    code = GOOD_CODE.replace("return _error(\"missing_field\", \"missing required field 'receipt_id': a receipt id such as 'r1'\")",
                             "return _error(\"not_found\", \"no receipt given\")")
    report = probe(_env(code), BACKEND)
    assert [(v.rule, v.where) for v in report.violations] == [(1, "get_receipt({})")]
