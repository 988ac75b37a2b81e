"""The EnvCraft scenario catalogue (Tables 5-14) as shipped data: rows as the paper gives them."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envtrain.core.errors import SpecError
from envtrain.synth.catalogue import ScenarioCard, load_catalogue, select
from envtrain.synth.cli import synth_cmd


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command("synth")(synth_cmd)
    app.command("noop")(lambda: None)
    return app


def test_every_row_of_the_extracted_tables() -> None:
    cards = load_catalogue()
    assert len(cards) == 60
    by_domain = {d: [c for c in cards if c.domain == d] for d in ("general", "claw")}
    assert len(by_domain["general"]) == len(by_domain["claw"]) == 30
    assert {c.table for c in by_domain["general"]} == {5, 6, 7, 8, 9}
    assert {c.table for c in by_domain["claw"]} == {10, 11, 12, 13, 14}
    assert [c.number for c in by_domain["claw"] if c.table == 12] == [19, 20, 21, 22, 23, 24]
    assert len({c.key for c in cards}) == len({c.id for c in cards}) == 60


def test_rows_are_the_papers_words() -> None:
    cards = {c.key: c for c in load_catalogue()}
    assert cards["claw-12"] == ScenarioCard(
        domain="claw", table=11, number=12, envs=5, name="Automated Reimbursement Reconciliation",
        description="Automated reimbursement environments supporting receipt recognition, bank-statement matching, "
                    "expense-report completion, approval processing, and multidimensional reconciliation.")
    assert cards["general-3"].description.startswith("Jupyter Notebook server APIs")
    assert cards["general-38"].name == "Support Ticketing" and cards["general-38"].table == 9
    assert sum(c.envs for c in cards.values() if c.domain == "general") == 54


def test_card_id_is_its_content_hash() -> None:
    card = load_catalogue()[0]
    assert card.id == ScenarioCard.model_validate(card.model_dump()).id
    assert card.model_copy(update={"envs": 9}).id != card.id


def test_select_by_key_domain_and_words() -> None:
    cards = load_catalogue()
    assert [c.key for c in select(cards, "claw-12")] == ["claw-12"]
    assert len(select(cards, "general")) == 30
    assert [c.key for c in select(cards, "travel budget, claw-12")] == ["claw-11", "claw-12"]
    assert select(cards, None) == cards
    with pytest.raises(SpecError, match="no scenario matches 'teleportation'"):
        select(cards, "teleportation")


def test_a_scenario_file_of_ones_own(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("scenarios:\n  - {domain: claw, number: 1, name: Lab notebook, description: Experiment records.}\n")
    (card,) = load_catalogue(path)
    assert card.table is None and card.key == "claw-1"
    path.write_text("scenarios:\n  - {domain: moon, number: 1, name: x, description: y}\n")
    with pytest.raises(SpecError, match="scenarios.0: domain"):
        load_catalogue(path)


def test_cli_lists_and_selects() -> None:
    result = CliRunner().invoke(_cli(), ["synth", "--scenarios", "builtin", "--list", "--select", "claw"])
    assert result.exit_code == 0, result.output
    assert "Automated Reimbursement" in result.output and "Messaging" not in result.output
    result = CliRunner().invoke(_cli(), ["synth", "--select", "claw-12", "--n", "1"])
    assert result.exit_code == 2 and "give --llm URL" in result.output
