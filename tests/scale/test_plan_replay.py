"""Plans are data and Apply is a pure function: replays rebuild the same child; bad plans are
refused with a sentence that names the step and the reason."""

from __future__ import annotations

import json

import pytest

from envtrain.core import Environment
from envtrain.scale.apply import apply_plan, registry_of
from envtrain.scale.model import leaf_ids
from envtrain.scale.operators.base import PlanError
from envtrain.scale.plan import Plan, plan_schema
from tests.scale.kit import example, plan_for, scale, step

COMPOSED = [
    step("index reconstruction", "invoicing.vendors"),
    step("staged release", "invoicing.invoices", stages=2),
    step("multi-source exports", "invoicing.payments", binds=("L1:index", "L2:stage")),
]


def test_replay_rebuilds_the_same_child_and_survives_a_round_trip(tmp_path) -> None:
    root = example("invoicing_payment_run")
    plan = plan_for(root, *COMPOSED)
    first, second = apply_plan(root, plan), apply_plan(root, plan)
    assert first.id == second.id and first.to_json() == second.to_json()
    first.save(tmp_path / "child.json")
    plan.save(tmp_path / "plan.json")
    assert Environment.load(tmp_path / "child.json").id == first.id
    assert Plan.load(tmp_path / "plan.json") == plan
    assert apply_plan(root, Plan.load(tmp_path / "plan.json")).id == first.id


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([step("teleportation", "helpdesk.tickets")], "unknown operator 'teleportation'"),
        ([step("pagination", "helpdesk.nothing", page_size=2)], "unknown target 'helpdesk.nothing'"),
        ([step("pagination", "helpdesk.tickets", page_size=0)], "bad parameters"),
        (
            [step("pagination", "helpdesk.tickets", page_size=2), step("sharding", "helpdesk.tickets", parts=2)],
            "already transformed",
        ),
        ([step("pagination", "helpdesk.tickets", page_size=2, binds=("L1",))], "at most 0 binding"),
        ([step("export preparation", "helpdesk.tickets", binds=("L9",))], "no view 'L9'"),
        (
            [step("pagination", "helpdesk.tickets", page_size=2), step("export preparation", "helpdesk.agents", binds=("L1",))],
            "publishes no token",
        ),
        ([step("field references", "helpdesk.tickets", column="id")], "not a non-key text column"),
    ],
)
def test_bad_plans_are_refused_with_the_reason(steps, message) -> None:
    root = example("helpdesk_escalation")
    with pytest.raises(PlanError, match=message):
        apply_plan(root, plan_for(root, *steps))


def test_a_plan_for_another_parent_is_refused() -> None:
    root = example("helpdesk_escalation")
    plan = Plan(parent="0" * 16, steps=(step("pagination", "helpdesk.tickets", page_size=2),))
    with pytest.raises(PlanError, match="is for environment 0000000000000000"):
        apply_plan(root, plan)


def test_plan_schema_validates_answers() -> None:
    schema = plan_schema()
    assert {"parent", "steps"} <= set(schema["properties"])
    with pytest.raises(PlanError, match="steps"):
        Plan.parse({"parent": "x"})
    with pytest.raises(PlanError, match="steps.0.colour: Extra inputs"):
        Plan.parse({"parent": "x", "steps": [{"operator": "pagination", "target": "L1", "colour": "red"}]})
    assert Plan.parse(
        json.loads(plan_for(example("helpdesk_escalation"), step("sharding", "helpdesk.tickets", parts=2)).to_json())
    )


def test_released_dependencies_drop_every_cross_view_prerequisite() -> None:
    root = example("invoicing_payment_run")
    child, _, result = scale(root, *COMPOSED, step("dependent lookups", "L1"), release=True)
    assert result.accepted, result.diagnostics()
    registry = registry_of(child)
    assert registry.released
    assert all(not getattr(layer, "requires", ()) for leaf in registry.leaves for layer in leaf.layers)
    gate = next(layer for leaf in registry.leaves for layer in leaf.layers if layer.kind == "keygate")
    assert gate.directory is None and gate.keys[0][1] in child.docs[-1].body + "".join(d.body for d in child.docs)
    assert all(not name.startswith("token_") for a in child.apps for t in a.tools for name in t.parameters["properties"])
    full, _, _ = scale(root, *COMPOSED, step("dependent lookups", "L1"))
    assert len(child.reference_solution) < len(full.reference_solution)


def test_a_later_round_builds_on_inherited_views() -> None:
    root = example("helpdesk_escalation")
    first, _, r1 = scale(root, step("sharding", "helpdesk.tickets", parts=2))
    second, _, r2 = scale(first, step("pagination", "L2", page_size=1), step("export preparation", "L3"))
    assert r1.accepted and r2.accepted, r2.diagnostics()
    tree = registry_of(second).resource("helpdesk.tickets").tree
    assert leaf_ids(tree) == ["L2", "L3"]
    assert second.provenance.depth == 2 and second.provenance.parent == first.id
    assert len(second.reference_solution) > len(first.reference_solution) > len(root.reference_solution) - 1
