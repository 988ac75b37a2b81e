"""Checker scripts as verifiers: a workspace environment whose V+ no condition can say is admitted
only when the five conditions hold for its checker, and is scored by it in a session."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest

from envtrain.apps.handlers import builtin_handlers
from envtrain.core import Environment, Runtime
from envtrain.core.admission import check_admission
from envtrain.core.errors import SpecError
from envtrain.sandbox import unavailable
from envtrain.sandbox.shell import shell_handlers
from envtrain.synth.workspace import TEMPLATES, build, json_checker

BACKEND = "bwrap" if unavailable("bwrap") is None else "local"


@pytest.fixture(scope="module")
def handlers() -> dict:
    return {**builtin_handlers(), **shell_handlers(BACKEND)}


@pytest.fixture(scope="module")
def env() -> Environment:
    return build(TEMPLATES["status_summary"](random.Random(5)))


def _with_check(env: Environment, script: str) -> Environment:
    data = env.model_dump(mode="json", exclude={"id"})
    data["verifier"]["checks"][0]["script"] = script
    return Environment.parse(data)


def test_checker_environment_is_admitted(env: Environment, handlers: dict) -> None:
    assert env.verifier.checks and not env.verifier.positive
    report = check_admission(env, handlers=handlers, search_budget=40)
    assert report.admitted, report.to_dict()


def test_any_spelling_of_the_answer_passes(env: Environment, handlers: dict) -> None:
    # The point of a checker: the same JSON in another key order and indentation is the same answer.
    expected: dict[str, dict[str, int]] = {}
    for row in csv.DictReader(io.StringIO(env.world.files["data/orders.csv"])):
        entry = expected.setdefault(row["status"], {"orders": 0, "amount": 0})
        entry["orders"] += 1
        entry["amount"] += int(row["amount"])
    runtime = Runtime(env, handlers=handlers)
    with runtime.session() as s:
        s.reset()
        assert not s.verify().passed
        text = json.dumps(dict(reversed(list(expected.items()))), indent=4)
        assert s.step({"tool": "write_file", "arguments": {"path": "reports/by_status.json", "content": text}}).ok
        result = s.verify()
        assert result.passed and result.score == 1.0
        check = next(a for a in result.assertions if a.name.startswith("reports/by_status.json"))
        assert check.count == 1 and check.condition.endswith(f"[score 1.0: {len(expected)} of {len(expected)} keys right]")
        assert s.step({"tool": "write_file", "arguments": {"path": "reports/by_status.json", "content": "{}", "overwrite": True}}).ok
        assert not s.verify().passed


@pytest.mark.parametrize("script, condition", [
    ("import json\nprint(json.dumps({'pass': True}))\n", 1),  # holds on W0: the task is solved by doing nothing
    ("import json\nprint(json.dumps({'pass': False}))\n", 2),  # never holds: pi does not reach it
    ("raise SystemExit(3)\n", 2),  # a broken checker fails, and is rejected, never raised
])
def test_a_checker_that_cannot_tell_is_rejected(env: Environment, handlers: dict, script: str, condition: int) -> None:
    report = check_admission(_with_check(env, script), handlers=handlers, search_budget=40)
    assert not report.admitted and condition in {f.condition for f in report.failures}


def test_documents_without_checks_keep_their_ids(env: Environment) -> None:
    data = env.model_dump(mode="json", exclude={"id"})
    data["verifier"].pop("checks")
    plain = Environment.parse(data)
    assert "checks" not in plain.model_dump(mode="json")["verifier"]
    assert json.loads(plain.to_json())["verifier"].keys() == {"positive", "negative"}


def test_check_handler_must_be_registered(env: Environment) -> None:
    with pytest.raises(SpecError, match=r"verifier.checks.0 .*handler 'shell.check' is not registered"):
        Runtime(env, handlers={**builtin_handlers(), "shell.run": shell_handlers(BACKEND)["shell.run"]})


def test_json_checker_scores_keys() -> None:
    from envtrain.sandbox.checker import run_check

    script = json_checker("out.json", {"a": 1, "b": 2})
    assert run_check({"out.json": '{"b": 2, "a": 1}'}, script, BACKEND)["pass"] is True
    assert run_check({"out.json": '{"a": 1, "b": 3}'}, script, BACKEND) == {"pass": False, "score": 0.5, "detail": "1 of 2 keys right"}
    assert run_check({}, script, BACKEND)["detail"].startswith("out.json: [Errno 2]")
