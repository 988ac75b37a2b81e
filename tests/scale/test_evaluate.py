"""Target evaluation at selected nodes (RES §3.4): three assessed failures stop a lineage; a pass
or a measurement error (an attempt that ended in ``error``) does not."""

from __future__ import annotations

import json
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from envtrain.agent.baselines import NoopPolicy
from envtrain.core import Environment
from envtrain.scale.cli import scale_app
from envtrain.scale.evaluate import verdict
from envtrain.scale.lineage import ScaleConfig, run_lineage
from tests.scale.kit import EXAMPLES, example

ROOT = EXAMPLES / "helpdesk_escalation.yaml"


class BrokenPolicy:
    """A policy whose backend cannot be reached: every episode ends with stop reason 'error'."""

    name = "broken"

    def __init__(self, healthy_after: int = 99) -> None:
        self.healthy_after = healthy_after  # attempts from this index on answer like noop
        self.calls = 0

    async def generate(self, messages, tools, params, ctx) -> Any:
        self.calls += 1
        if ctx.attempt >= self.healthy_after:
            return await NoopPolicy().generate(messages, tools, params, ctx)
        raise ConnectionError("connection refused")

    async def aclose(self) -> None:
        return None


def _config(**kw: Any) -> ScaleConfig:
    return ScaleConfig(depth=3, lookahead=1, **kw)


def _eval(tmp_path, depth: int) -> dict:
    folder = tmp_path / "lineages" / example("helpdesk_escalation").id
    return json.loads((folder / f"{depth}.eval.json").read_text())


def test_verdict_counts_passes_failures_and_measurement_errors() -> None:
    fail, ok, err = ({"passed": p, "stop_reason": r} for p, r in ((False, "done"), (True, "done"), (False, "error")))
    assert verdict([fail, fail, fail]) == {"passes": 0, "assessed_failures": 3, "measurement_errors": 0, "stop": True}
    assert verdict([fail, fail, err])["stop"] is False
    assert verdict([fail, ok, fail])["stop"] is False
    timeout = {"passed": False, "stop_reason": "timeout"}  # the agent ran out of time: a failure, not an error
    assert verdict([fail, timeout, {"passed": False, "stop_reason": "turn_limit"}])["stop"] is True


def test_noop_stops_the_lineage_after_three_assessed_failures(tmp_path) -> None:
    status = run_lineage(ROOT, tmp_path, _config(evaluate_policy="noop", evaluate_at=(1, 3)))
    assert status["state"] == "stopped" and status["depth"] == 1
    assert status["reason"] == "target evaluation: 3 assessed failures of noop at depth 1"
    record = _eval(tmp_path, 1)
    assert [a["stop_reason"] for a in record["attempts"]] == ["done"] * 3
    assert (record["passes"], record["assessed_failures"], record["measurement_errors"], record["stop"]) == (0, 3, 0, True)
    folder = tmp_path / "lineages" / example("helpdesk_escalation").id
    assert not (folder / "2.json").exists()
    # A resumed run reads the record back and stays stopped.
    assert run_lineage(ROOT, tmp_path, _config(evaluate_policy="noop", evaluate_at=(1, 3)))["depth"] == 1


def test_oracle_never_stops_the_lineage(tmp_path) -> None:
    status = run_lineage(ROOT, tmp_path, _config(evaluate_policy="oracle", evaluate_at=(0,), evaluate_every=1))
    assert status["state"] == "done" and status["depth"] == 3
    folder = tmp_path / "lineages" / example("helpdesk_escalation").id
    for depth in range(4):
        record = _eval(tmp_path, depth)
        node = Environment.load(folder / f"{depth}.json")
        assert (record["env"], record["passes"], record["stop"]) == (node.id, 3, False), depth
        assert [a["tool_calls"] for a in record["attempts"]] == [len(node.reference_solution)] * 3


def test_measurement_errors_are_not_assessed_failures(tmp_path) -> None:
    policy = BrokenPolicy()
    status = run_lineage(ROOT, tmp_path, _config(evaluate_policy="broken", evaluate_every=1), policy=policy)
    assert status["state"] == "done" and status["depth"] == 3
    record = _eval(tmp_path, 2)
    assert [a["stop_reason"] for a in record["attempts"]] == ["error"] * 3
    assert "connection refused" in record["attempts"][0]["error"]
    assert (record["assessed_failures"], record["measurement_errors"], record["stop"]) == (0, 3, False)


def test_one_measurement_error_among_failures_keeps_the_lineage_going(tmp_path) -> None:
    status = run_lineage(
        ROOT, tmp_path, _config(evaluate_policy="broken", evaluate_at=(1,)), policy=BrokenPolicy(healthy_after=1)
    )
    assert status["state"] == "done" and status["depth"] == 3
    record = _eval(tmp_path, 1)
    assert (record["assessed_failures"], record["measurement_errors"], record["stop"]) == (2, 1, False)


def test_evaluation_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="need evaluate_policy"):
        ScaleConfig(evaluate_at=(1,))
    with pytest.raises(ValueError, match="needs the depths"):
        ScaleConfig(evaluate_policy="noop")
    with pytest.raises(ValueError, match="depths are 0..2"):
        ScaleConfig(depth=2, evaluate_policy="noop", evaluate_at=(3,))


def test_cli_evaluates_and_reports(tmp_path) -> None:
    app = typer.Typer()
    app.add_typer(scale_app, name="scale")
    out = tmp_path / "out"
    args = ["scale", "--envs", str(ROOT), "--depth", "2", "--lookahead", "1", "--out", str(out)]
    result = CliRunner().invoke(app, args + ["--evaluate-policy", "noop", "--evaluate-at", "1"])
    assert result.exit_code == 0, result.output
    assert "lineages stopped by target evaluation" in result.output
    report = json.loads((out / "report.json").read_text())
    assert report["evaluation"] == {
        "nodes": 1,
        "attempts": 3,
        "passes": 0,
        "assessed_failures": 3,
        "measurement_errors": 0,
        "lineages_stopped": 1,
        "by_depth": {"1": {"nodes": 1, "attempts": 3, "passes": 0, "stops": 1}},
    }
    bad = CliRunner().invoke(app, args[:-1] + [str(tmp_path / "other"), "--evaluate-at", "1"])
    assert bad.exit_code == 2 and "need evaluate_policy" in bad.output
    bad = CliRunner().invoke(app, args[:-1] + [str(tmp_path / "other"), "--evaluate-policy", "nope", "--evaluate-at", "1"])
    assert bad.exit_code == 2 and "--evaluate-policy: unknown policy 'nope'" in bad.output
