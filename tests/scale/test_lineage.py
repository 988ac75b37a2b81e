"""Recursion: proposals, the repair loop, lineages on disk (resume, corruption), the ablations,
and the growth of the reference path with depth."""

from __future__ import annotations

import json
import shutil

import pytest

from envtrain.core import Environment
from envtrain.scale.apply import registry_of
from envtrain.scale.lineage import ScaleConfig, extend, make_proposer, run_lineage, scale_all
from envtrain.scale.operators import BASIC
from envtrain.scale.propose import Attempt, ProgrammaticProposer
from tests.scale.kit import EXAMPLES, example

ROOTS = ["helpdesk_escalation", "hr_leave_release_freeze", "workspace_incident_summary"]


def test_proposals_are_seeded() -> None:
    root = example("helpdesk_escalation")
    a, _ = ProgrammaticProposer(seed=1).propose(root, [])
    b, _ = ProgrammaticProposer(seed=1).propose(root, [])
    c = {ProgrammaticProposer(seed=s).propose(root, [])[0].hash for s in range(2, 6)}
    assert a == b and len(c | {a.hash}) > 1


def test_repair_history_bans_rejected_pairs() -> None:
    root = example("helpdesk_escalation")
    proposer = ProgrammaticProposer(seed=0, max_steps=1, lookahead=1)
    first, _ = proposer.propose(root, [])
    history = [Attempt(first, False, ("records",), ("records: planted",))]
    for _ in range(5):
        again, _ = proposer.propose(root, history)
        assert (again.steps[0].operator, again.steps[0].target) != (first.steps[0].operator, first.steps[0].target)
        history.append(Attempt(again, False, ("records",), ()))


def test_reference_path_grows_with_depth() -> None:
    config = ScaleConfig(depth=3)
    for name in ROOTS:
        node = example(name)
        lengths = [len(node.reference_solution)]
        for _ in range(3):
            ext = extend(node, make_proposer(config), config)
            assert ext.child is not None, ext.attempts
            node = ext.child
            lengths.append(len(node.reference_solution))
        assert lengths[1] <= lengths[2] <= lengths[3], (name, lengths)
        assert lengths[3] > lengths[0], (name, lengths)
        assert node.verifier.model_dump_json() == example(name).verifier.model_dump_json()


def test_lineage_resumes_and_rebuilds_a_corrupt_node(tmp_path) -> None:
    config = ScaleConfig(depth=2, lookahead=2)
    path = EXAMPLES / "helpdesk_escalation.yaml"
    status = run_lineage(path, tmp_path, config)
    folder = tmp_path / "lineages" / example("helpdesk_escalation").id
    assert status["state"] == "done" and status["depth"] == 2
    assert sorted(p.name for p in folder.iterdir()) == [
        "0.json",
        "1.json",
        "1.plan.json",
        "1.validation.json",
        "2.json",
        "2.plan.json",
        "2.validation.json",
        "status.json",
    ]
    second = Environment.load(folder / "2.json").id
    (folder / "2.json").unlink()  # interrupted before the node was complete
    assert run_lineage(path, tmp_path, config)["depth"] == 2
    assert Environment.load(folder / "2.json").id == second  # the same child again: replay is deterministic
    text = (folder / "1.json").read_text().replace('"Cannot reset my password"', '"Cannot reset my passwort"')
    (folder / "1.json").write_text(text)
    status = run_lineage(path, tmp_path, config)
    assert status["warnings"] and status["warnings"][0].startswith("depth 1: lineage:")
    assert Environment.load(folder / "2.json").id == second


def test_scale_all_report_and_config_guard(tmp_path) -> None:
    roots = [EXAMPLES / f"{n}.yaml" for n in ROOTS[:2]]
    report = scale_all(roots, tmp_path, ScaleConfig(depth=2, lookahead=2))
    assert report["lineages"] == 2 and report["children"] == 4 and report["share_at_cap"] == 1.0
    assert len(report["reference_length_current"]) == 3
    assert report["reference_length_current"][2] > report["reference_length_current"][0]
    assert sum(report["operators_accepted"].values()) >= 4
    assert json.loads((tmp_path / "report.json").read_text())["children"] == 4
    with pytest.raises(ValueError, match="other settings"):
        scale_all(roots, tmp_path, ScaleConfig(depth=3))


@pytest.mark.parametrize("ablation", ["basic", "no-deps", "no-inheritance"])
def test_ablations(tmp_path, ablation) -> None:
    config = ScaleConfig(depth=2, ablation=ablation, lookahead=2)
    status = run_lineage(EXAMPLES / "invoicing_payment_run.yaml", tmp_path, config)
    folder = tmp_path / "lineages" / status["root"]
    children = [Environment.load(folder / f"{d}.json") for d in (1, 2)]
    plans = [json.loads((folder / f"{d}.plan.json").read_text()) for d in (1, 2)]
    if ablation == "basic":
        assert {s["operator"] for p in plans for s in p["steps"]} <= set(BASIC)
    elif ablation == "no-deps":
        registry = registry_of(children[-1])
        assert registry.released
        assert all(not getattr(layer, "requires", ()) for leaf in registry.leaves for layer in leaf.layers)
    else:
        assert all(c.provenance.parent == status["root"] and c.provenance.depth == 1 for c in children)


def test_a_root_that_is_not_an_environment_is_reported(tmp_path) -> None:
    bad = tmp_path / "envs" / "broken.json"
    bad.parent.mkdir()
    bad.write_text('{"apps": ["helpdesk"], "request": "x"}')
    shutil.copy(EXAMPLES / "helpdesk_escalation.yaml", tmp_path / "envs")
    report = scale_all(sorted((tmp_path / "envs").iterdir()), tmp_path / "out", ScaleConfig(depth=1, lookahead=1))
    assert report["lineages"] == 1 and str(bad) in report["not_loaded"]


def test_release_saved_lineage_keeps_task_and_drops_prerequisites(tmp_path) -> None:
    from envtrain.scale.lineage import release_saved
    from envtrain.scale.validate import validate

    status = run_lineage(EXAMPLES / "invoicing_payment_run.yaml", tmp_path, ScaleConfig(depth=3, lookahead=2))
    folder = tmp_path / "lineages" / status["root"]
    released = release_saved(folder)
    assert len(released) == 4
    for (parent, _), (child, plan) in zip(released, released[1:]):
        if plan is None:
            continue
        result = validate(parent, child, plan)
        assert result.accepted, result.diagnostics()
        registry = registry_of(child)
        assert all(not getattr(layer, "requires", ()) for leaf in registry.leaves for layer in leaf.layers)
    saved = Environment.load(folder / "3.json")
    assert released[-1][0].verifier == saved.verifier and released[-1][0].request == saved.request
    assert len(released[-1][0].reference_solution) <= len(saved.reference_solution)
