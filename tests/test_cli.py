"""The envtrain command as a user runs it: exit codes, JSON reports, show and play."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from envtrain.core import Environment

from .conftest import ledger_env

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "helpdesk_escalation.yaml"


def envtrain(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envtrain.cli", *args], capture_output=True, text=True, input=stdin, cwd=ROOT, timeout=120)


def test_check_admits_an_example() -> None:
    out = envtrain("env", "check", str(EXAMPLE), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["admitted"] is True and report["conditions"] == {str(n): True for n in range(1, 6)}


def test_check_rejects_and_names_the_condition(tmp_path) -> None:
    bad = ledger_env(reference_solution=[{"tool": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 1.0}}])
    path = tmp_path / "bad.json"
    bad.save(path)
    out = envtrain("env", "check", str(path))
    assert out.returncode == 1
    assert "condition (2)" in out.stdout and "V+ invoice 10 paid" in out.stdout
    report = json.loads(envtrain("env", "check", str(path), "--json").stdout)
    assert report["admitted"] is False and [f["condition"] for f in report["failed"]] == [2]


def test_check_on_something_that_is_not_an_environment(tmp_path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"title": "shopping list"}')
    out = envtrain("env", "check", str(path))
    assert out.returncode == 2 and "not an environment" in out.stdout + out.stderr
    path.write_text("{broken")
    out = envtrain("env", "check", str(path))
    assert out.returncode == 2 and "not valid JSON" in out.stdout + out.stderr
    out = envtrain("env", "check", str(tmp_path / "missing.json"))
    assert out.returncode == 2 and "no such file" in out.stderr


def test_show_summarises() -> None:
    out = envtrain("env", "show", str(EXAMPLE))
    assert out.returncode == 0
    for text in ("escalation policy", "escalate_ticket", "reference solution", "helpdesk.tickets"):
        assert text in out.stdout


def test_play_drives_a_session(tmp_path) -> None:
    path = tmp_path / "ledger.json"
    ledger_env().save(path)
    script = "tools\npay_invoice {\"invoice_id\": 11, \"amount\": 1}\npay_invoice {\"invoice_id\": 10, \"amount\": 100}\nverify\nquit\n"
    out = envtrain("env", "play", str(path), stdin=script)
    assert out.returncode == 0, out.stderr
    assert "409" in out.stdout and "Invoice 11 is not approved." in out.stdout
    assert "score 1.00  passed True" in out.stdout


def test_saved_example_round_trips(tmp_path) -> None:
    env = Environment.load(EXAMPLE)
    path = tmp_path / "example.json"
    env.save(path)
    assert Environment.load(path).id == env.id


def test_env_export_writes_a_dataset_that_gives_the_documents_back(tmp_path) -> None:
    from datasets import load_from_disk

    out = envtrain("env", "export", str(ROOT / "examples"), "--out", str(tmp_path / "hf"))
    assert out.returncode == 0, out.stderr
    data = load_from_disk(str(tmp_path / "hf"))
    examples = sorted((ROOT / "examples").glob("*.yaml"))
    assert len(data) == len(examples)
    ids = {Environment.load(p).id for p in examples}
    assert set(data["id"]) == ids
    assert {Environment.parse(json.loads(d)).id for d in data["document"]} == ids
    assert envtrain("env", "export", str(tmp_path / "missing"), "--out", str(tmp_path / "x")).returncode == 2
