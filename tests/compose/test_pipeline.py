"""`envtrain compose` end to end: every written environment is admitted; a resumed run loses and
duplicates nothing; bad input is one clear sentence."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from envtrain.core.admission import check_admission
from envtrain.core.env import Environment
from envtrain.compose.cli import compose_app
from tests.compose.conftest import TEST_DATASETS

ROOT = typer.Typer()
ROOT.add_typer(compose_app, name="compose")


def invoke(*args: str):
    return CliRunner().invoke(ROOT, ["compose", *args], catch_exceptions=False)


def test_compose_30_then_resume(tmp_path: Path, card_cache: str) -> None:
    out = tmp_path / "run"
    common = ["--n", "30", "--seed", "0", "--out", str(out), "--cache", card_cache, "--datasets", ",".join(TEST_DATASETS)]
    result = invoke(*common, "--workers", "2")
    assert result.exit_code == 0, result.output
    assert "admitted by archetype" in result.output

    manifest = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert [e["index"] for e in manifest] == list(range(30))
    admitted = {e["id"] for e in manifest if e["status"] == "admitted"}
    files = sorted((out / "envs").glob("*.json"))
    assert {f.stem for f in files} == admitted and len(admitted) >= 27
    for f in files:
        env = Environment.load(f)  # apps are stored by name; the loader expands them and the id still matches
        assert env.id == f.stem
        assert check_admission(env).admitted
    report = json.loads((out / "report.json").read_text())
    assert report["admitted"] == len(admitted) and report["indices"] == 30
    assert len(report["counts"]["archetypes"]) == 8
    assert set(report["skeletons"]["random"]["satisfied"]) == {"tool coverage", "carrier hosting", "schema compatibility", "rule attachment"}

    # delete half the environments and resume: the same ones come back, nothing is duplicated
    lost = files[::2]
    for f in lost:
        f.unlink()
    result = invoke(*common, "--workers", "1")
    assert result.exit_code == 0, result.output
    assert f"{len(lost)} of 30 indices to build" in result.output
    assert {f.stem for f in (out / "envs").glob("*.json")} == admitted
    again = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert [e["index"] for e in again] == list(range(30))
    assert {e["id"] for e in again if e["status"] == "admitted"} == admitted

    # an interrupted run: the manifest lost its last lines (a crash before they were written)
    (out / "manifest.jsonl").write_text("".join(json.dumps(e) + "\n" for e in again[:20]) + '{"index": 2')
    result = invoke(*common, "--workers", "1")
    assert result.exit_code == 0, result.output
    final = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert [e["index"] for e in final] == list(range(30)) and {e["id"] for e in final if e["status"] == "admitted"} == admitted


def test_bad_input_is_one_sentence(tmp_path: Path, card_cache: str) -> None:
    result = CliRunner().invoke(ROOT, ["compose", "--n", "2", "--out", str(tmp_path), "--cache", card_cache,
                                       "--datasets", "datasets/iris", "--apps", "helpdesk,erp", "--workers", "1"])
    assert result.exit_code == 2
    assert "error: unknown app 'erp'" in result.output
    result = CliRunner().invoke(ROOT, ["compose", "--n", "2", "--out", str(tmp_path), "--cache", card_cache,
                                       "--datasets", "nope/none", "--workers", "1"])
    assert result.exit_code == 2 and "unknown dataset 'nope/none'" in result.output
    broken = tmp_path / "atoms.yaml"
    broken.write_text("rules: [oops")
    result = CliRunner().invoke(ROOT, ["compose", "--n", "2", "--out", str(tmp_path), "--cache", card_cache,
                                       "--datasets", "datasets/iris", "--atoms", str(broken), "--workers", "1"])
    assert result.exit_code == 2 and "atoms.yaml: not valid YAML" in result.output
