"""The environment document: content id, canonical JSON, clear load errors."""

from __future__ import annotations

import json

import pytest

from envtrain.core import Environment, SpecError

from ..conftest import ledger_env


def test_id_is_the_hash_of_the_content() -> None:
    env = ledger_env()
    assert len(env.id) == 16
    assert ledger_env().id == env.id
    assert ledger_env(request="Pay invoice 10, please.").id != env.id


def test_spacing_of_clauses_does_not_change_the_id() -> None:
    loose = ledger_env(verifier={
        "positive": [{"name": "invoice 10 paid", "entity": "ledger.invoices", "where": ["id=10", "paid   =amount"], "count": "=1"}],
        "negative": [{"name": "no invoice created", "entity": "ledger.invoices", "count": "= 4"}],
    })
    assert loose.id == ledger_env().id
    assert loose.model_dump(mode="json")["verifier"]["positive"][0]["where"] == ["id = 10", "paid = amount"]


def test_save_and_load_round_trip(tmp_path) -> None:
    env = ledger_env()
    path = tmp_path / "env.json"
    env.save(path)
    again = Environment.load(path)
    assert again == env and again.id == env.id
    assert json.loads(path.read_text())["id"] == env.id


def test_a_wrong_id_is_refused(tmp_path) -> None:
    data = json.loads(ledger_env().to_json())
    data["request"] = "edited by hand"
    with pytest.raises(SpecError, match="does not match the content"):
        Environment.parse(data)
    del data["id"]
    assert Environment.parse(data).id != ledger_env().id


def test_named_builtin_apps_expand_to_full_specs() -> None:
    env = Environment.parse({
        "apps": ["helpdesk"], "request": "r", "verifier": {"positive": [{"entity": "helpdesk.tickets"}]},
        "reference_solution": [],
    })
    assert env.apps[0].name == "helpdesk" and len(env.apps[0].tools) >= 6
    assert env.model_dump(mode="json")["apps"][0]["name"] == "helpdesk"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"verifier": {"positive": [{"entity": "ledger.invoices", "where": ["id == 10"]}]}}, "verifier.positive.0.where.0: expected a value"),
        ({"verifier": {"positive": [{"entity": "ledger.invoices", "count": "lots"}]}}, "bad cardinality 'lots'"),
        ({"reference_solution": [{"tool": "pay_invoice", "args": {}}]}, "reference_solution.0.args: Extra inputs are not permitted"),
        ({"apps": ["nope"]}, "unknown app 'nope'"),
        ({"persona": "clerk"}, "persona: Input should be a valid dictionary"),
    ],
)
def test_malformed_documents_name_the_field(change, message) -> None:
    data = json.loads(ledger_env().to_json())
    del data["id"]
    data.update(change)
    with pytest.raises(SpecError) as info:
        Environment.parse(data, source="env.json")
    assert message in str(info.value) and str(info.value).startswith("env.json: ")


def test_runtime_errors_name_the_tool_and_clause() -> None:
    from envtrain.core import Runtime

    from ..conftest import LEDGER_APP

    app = json.loads(json.dumps(LEDGER_APP))
    app["tools"][1]["preconditions"][0]["where"] = ["idd = $arg.invoice_id"]
    with pytest.raises(SpecError) as info:
        Runtime(ledger_env(apps=[app]))
    assert "app ledger: tool pay_invoice precondition 1: clause 'idd = $arg.invoice_id': unknown column 'idd'" in str(info.value)


def test_not_an_environment() -> None:
    with pytest.raises(SpecError, match="not an environment"):
        Environment.parse({"hello": "world"}, source="x.json")
    with pytest.raises(SpecError, match="not an environment"):
        Environment.parse([1, 2], source="x.json")


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "properties": {"d": {"type": "string", "description": "a date", "YYYY-MM-DD": None}}}, "unknown JSON-schema key 'YYYY-MM-DD'"),
        ({"type": "object", "properties": {"n": {"type": "int"}}}, "unknown type 'int'"),
        ({"type": "object", "properties": {}, "required": ["x"]}, "required ['x'] are not in properties"),
        ({"type": "string"}, "type 'object'"),
    ],
)
def test_bad_tool_schemas_are_refused(schema, message) -> None:
    from envtrain.apps import parse_app

    app = {"name": "a", "description": "d", "entities": {}, "tools": [
        {"name": "t", "description": "t", "family": "file", "handler": "files.read", "parameters": schema}]}
    with pytest.raises(SpecError) as info:
        parse_app(app)
    assert message in str(info.value)
