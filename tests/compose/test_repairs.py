"""Atom repairs propagate (LegoEnv §3.5): a planted server-atom fault is diagnosed, repaired once, and
every later build from that atom uses the repaired version; a resumed run rebuilds exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from envtrain.apps import load_app
from envtrain.core.admission import check_admission
from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.compose.atoms import spec_hash
from envtrain.compose.pipeline import ComposeConfig, run
from envtrain.compose.repairs import AtomRepair, RepairStore, apply_repairs, repaired_pool
from tests.compose.conftest import TEST_DATASETS

APPS = ("helpdesk", "mail", "wiki", "spreadsheet", "chat")


def broken_helpdesk() -> dict:
    """The planted fault: escalate_ticket is gone while the capability card still claims the kind."""
    doc = load_app("helpdesk").model_dump(mode="json")
    doc["tools"] = [t for t in doc["tools"] if t["name"] != "escalate_ticket"]
    doc["capabilities"]["escalate ticket"] = ["set_priority"]
    return doc


def manifest(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


def config(tmp_path: Path, card_cache: str, n: int, **kw) -> ComposeConfig:
    atoms = tmp_path / "atoms.yaml"
    atoms.write_text(yaml.safe_dump({"servers": [broken_helpdesk()]}))
    return ComposeConfig(n=n, seed=0, out=tmp_path / "run", apps=APPS, datasets=TEST_DATASETS, workers=1, cache_dir=Path(card_cache),
                         atoms=atoms, **kw)


def test_a_planted_atom_fault_is_repaired_once_and_reaches_later_builds(tmp_path: Path, card_cache: str) -> None:
    faulty = load_app("helpdesk").model_validate(broken_helpdesk())
    atom = f"server:helpdesk@{spec_hash(faulty)}"

    report = run(config(tmp_path, card_cache, 24))
    out = tmp_path / "run"
    repairs = RepairStore(out / "repairs.json").read()
    assert len(repairs) == 1 and repairs[0].atom == atom and "escalate_ticket" in repairs[0].tools
    fix = repairs[0].id
    evolution = report["evolution"]
    assert evolution["repairs_made"] == [{"id": fix, "atom": atom, "fix": repairs[0].fix}]
    assert evolution["rebuilt"] >= 2 and evolution["rebuilt"] == evolution["rebuilt_admitted"]
    issues = json.loads((out / "issues.json").read_text())
    assert [(i["target"], i["pathway"], i["status"], i["repair"]) for i in issues] == [(atom, "repair atom", "repaired", fix)]
    assert len(issues[0]["envs"]) == evolution["rebuilt"]  # every environment that hit the fault is evidence for the one issue

    entries = manifest(out)
    escalations = [e for e in entries if e.get("action") == "escalate ticket"]
    assert escalations and all(e["status"] == "admitted" and e["repairs"] == [fix] for e in escalations)
    assert report["admitted"] == 24 and not any("diagnosis" in e for e in entries)
    env = Environment.load(out / "envs" / f"{escalations[0]['id']}.json")
    helpdesk = next(a for a in env.apps if a.name == "helpdesk")
    assert any(t.name == "escalate_ticket" for t in helpdesk.tools) and env.provenance.settings["repairs"] == [fix]
    assert check_admission(env).admitted

    # a later, larger run from the same folder: fresh builds from the faulty atom get the repair at once
    report = run(config(tmp_path, card_cache, 48))
    later = [e for e in manifest(out) if e["index"] >= 24]
    helpdesk_builds = [e for e in later if "helpdesk" in e.get("apps", [])]
    assert helpdesk_builds and all(e.get("repairs") == [fix] for e in helpdesk_builds)
    assert all(e["status"] == "admitted" for e in later)
    assert report["evolution"]["repairs_made"] == [] and report["evolution"]["rebuilt"] == 0
    assert len(RepairStore(out / "repairs.json").read()) == 1  # repaired once

    # resume stays exact: a lost repaired environment comes back with the same id
    lost = escalations[0]["id"]
    (out / "envs" / f"{lost}.json").unlink()
    run(config(tmp_path, card_cache, 48))
    assert (out / "envs" / f"{lost}.json").exists()
    assert {e["id"] for e in manifest(out) if e["status"] == "admitted"} == {f.stem for f in (out / "envs").glob("*.json")}


def test_without_evolution_the_fault_is_only_counted(tmp_path: Path, card_cache: str) -> None:
    report = run(config(tmp_path, card_cache, 24, evolve=False))
    assert report["admitted"] < 24 and "evolution" not in report
    assert not (tmp_path / "run" / "repairs.json").exists()
    assert any("escalate_ticket" in reason for reason in report["rejections"]["by_reason"])


def test_repairs_apply_in_a_chain_each_version_once() -> None:
    reference = load_app("helpdesk")
    faulty = load_app("helpdesk").model_validate(broken_helpdesk())
    first = AtomRepair(atom=f"server:helpdesk@{spec_hash(faulty)}", reason="r", fix="f",
                       tools={"escalate_ticket": reference.tool("escalate_ticket").model_dump(mode="json")},
                       capabilities={"escalate ticket": ["escalate_ticket"]})
    middle = first.apply(faulty)
    assert middle.tool("escalate_ticket") == reference.tool("escalate_ticket") and spec_hash(middle) != spec_hash(faulty)
    second = AtomRepair(atom=f"server:helpdesk@{spec_hash(middle)}", reason="r", fix="drop a tool",
                        tools={"merge_tickets": None} if any(t.name == "merge_tickets" for t in middle.tools) else {},
                        capabilities={"renamed kind": ["set_priority"]})
    final, ids = apply_repairs(faulty, [second, first])  # order in the store does not matter: versions chain
    assert ids == (first.id, second.id) and final.capabilities["renamed kind"] == ("set_priority",)
    assert apply_repairs(reference, [first]) == (reference, ())  # a repair reaches only the version it names


def test_the_store_keeps_one_repair_per_atom_version_and_rejects_a_broken_file(tmp_path: Path, pool) -> None:
    store = RepairStore(tmp_path / "repairs.json")
    faulty = load_app("helpdesk").model_validate(broken_helpdesk())
    repair = AtomRepair(atom=f"server:helpdesk@{spec_hash(faulty)}", reason="r", fix="f",
                        capabilities={"escalate ticket": ["set_priority", "assign_ticket"]})
    assert store.add(repair) == (repair, True)
    other = repair.model_copy(update={"capabilities": {"escalate ticket": ["assign_ticket"]}})
    assert store.add(other) == (repair, False) and len(store.read()) == 1
    assert repaired_pool(pool, store.read()) is pool  # the built-in helpdesk is not the faulty version
    (tmp_path / "repairs.json").write_text('[{"atom": "helpdesk"}]')
    with pytest.raises(SpecError, match="repairs.json: not a list of repairs"):
        store.read()
