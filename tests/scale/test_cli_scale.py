"""``envtrain scale`` end to end, through the typer functions exactly as the CLI registers them."""

from __future__ import annotations

import json
import shutil

import typer
from typer.testing import CliRunner

from envtrain.core import Environment
from envtrain.core.admission import check_admission
from envtrain.scale.cli import scale_app
from tests.scale.kit import EXAMPLES

NAMES = ["helpdesk_escalation", "mail_invoice_routing", "spreadsheet_expense_approvals"]


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(scale_app, name="scale")  # what envtrain/cli.py does
    return app


def test_scale_to_depth_three_then_validate_a_node(tmp_path) -> None:
    envs = tmp_path / "envs"
    envs.mkdir()
    for name in NAMES:
        shutil.copy(EXAMPLES / f"{name}.yaml", envs)
    out = tmp_path / "out"
    result = CliRunner().invoke(_cli(), ["scale", "--envs", str(envs), "--depth", "3", "--seed", "0", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "3 lineages, 9 accepted children" in result.output
    report = json.loads((out / "report.json").read_text())
    assert report["share_at_cap"] == 1.0 and report["reference_growth_at_5"] > 1.0
    for folder in (out / "lineages").iterdir():
        root = Environment.load(folder / "0.json")
        for depth in (1, 2, 3):
            child = Environment.load(folder / f"{depth}.json")
            assert child.provenance.depth == depth
            assert child.request == root.request and child.verifier.model_dump_json() == root.verifier.model_dump_json()
            assert check_admission(child).admitted  # what `envtrain env check` runs
    folder = next((out / "lineages").iterdir())
    ok = CliRunner().invoke(
        _cli(), ["scale", "validate", str(folder / "2.json"), str(folder / "3.json"), str(folder / "3.plan.json")]
    )
    assert ok.exit_code == 0, ok.output
    assert "accepted" in ok.output
    wrong = CliRunner().invoke(
        _cli(), ["scale", "validate", str(folder / "1.json"), str(folder / "3.json"), str(folder / "3.plan.json"), "--json"]
    )
    assert wrong.exit_code == 1
    assert "lineage" in json.loads(wrong.output)["failed"]
    again = CliRunner().invoke(_cli(), ["scale", "--envs", str(envs), "--depth", "3", "--out", str(out)])
    assert again.exit_code == 0 and "9 accepted children" in again.output  # resumed: nothing left to do


def test_bad_input_exits_with_one_sentence(tmp_path) -> None:
    missing = CliRunner().invoke(_cli(), ["scale", "--envs", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")])
    assert missing.exit_code == 2 and "no such file or folder" in missing.output
    no_out = CliRunner().invoke(_cli(), ["scale", "--envs", str(EXAMPLES)])
    assert no_out.exit_code == 2 and "--out" in no_out.output
    ablation = CliRunner().invoke(
        _cli(), ["scale", "--envs", str(EXAMPLES), "--out", str(tmp_path / "o"), "--ablation", "sideways"]
    )
    assert ablation.exit_code == 2 and "ablation" in ablation.output
    edited = tmp_path / "child.json"
    text = EXAMPLES / "helpdesk_escalation.yaml"
    env = Environment.load(text)
    data = json.loads(env.to_json())
    data["request"] = "Do nothing."  # id no longer matches the content
    edited.write_text(json.dumps(data))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"parent": env.id, "steps": [{"operator": "pagination", "target": "helpdesk.tickets"}]}))
    hand = CliRunner().invoke(_cli(), ["scale", "validate", str(text), str(edited), str(plan), "--json"])
    assert hand.exit_code == 1 and json.loads(hand.output)["failed"] == ["lineage"]
