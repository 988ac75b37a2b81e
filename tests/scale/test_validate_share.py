"""Validation shares work between its checks (one compiled child, one traversal, one reading of
the original records); with ``share=False`` every check computes its own evidence. Both must
reach the same verdict with the same diagnostics and evidence, on accepted children and on
planted faults alike."""

from __future__ import annotations

from typing import Any

from envtrain.core.io import content_hash
from envtrain.scale.apply import apply_plan, with_solution
from envtrain.scale.lineage import ScaleConfig, extend, make_proposer
from envtrain.scale.validate import Validation, validate
from tests.scale.kit import example, plan_for, step
from tests.scale.test_faults import DanglingReferences, EndlessStages, LeakyPagination, LosingSharding, SelfBoundExport, _with


def _same(a: Validation, b: Validation) -> None:
    def strip(v: Validation) -> dict[str, Any]:
        data = v.model_dump(mode="json", exclude={"seconds"})
        data["checks"] = [{k: c[k] for k in ("name", "passed", "messages")} for c in data["checks"]]
        data["evidence"].get("admission", {}).pop("seconds", None)
        return data

    assert strip(a) == strip(b)


def test_shared_and_unshared_validation_agree_along_lineages() -> None:
    config = ScaleConfig(depth=3, lookahead=2)
    for name in ("helpdesk_escalation", "workspace_incident_summary", "crm_invoicing_followup"):
        node = example(name)
        for _ in range(3):
            ext = extend(node, make_proposer(config), config)
            assert ext.child is not None and ext.plan is not None
            _same(validate(node, ext.child, ext.plan), validate(node, ext.child, ext.plan, share=False))
            node = ext.child


def test_shared_and_unshared_validation_agree_on_faults() -> None:
    root = example("helpdesk_escalation")
    cases = [
        (_with(LosingSharding()), step("sharding", "helpdesk.tickets", parts=2)),
        (_with(DanglingReferences()), step("field references", "helpdesk.tickets", column="priority")),
        (_with(EndlessStages()), step("staged release", "helpdesk.tickets", stages=2)),
        (_with(LeakyPagination()), step("pagination", "helpdesk.tickets", page_size=2)),
        (_with(SelfBoundExport()), step("export preparation", "helpdesk.tickets")),
    ]
    for operators, planted in cases:
        plan = plan_for(root, planted)
        child = apply_plan(root, plan, operators=operators)
        _same(validate(root, child, plan, operators=operators), validate(root, child, plan, operators=operators, share=False))
    # A child edited by hand: facts changed (so the replay may not read them from the child) ...
    plan = plan_for(root, step("pagination", "helpdesk.tickets", page_size=3))
    child = apply_plan(root, plan)
    tables = dict(child.world.tables)
    tables["helpdesk.tickets"] = [dict(r, subject="edited") if i == 0 else r for i, r in enumerate(tables["helpdesk.tickets"])]
    edited = _rehash(child.model_copy(update={"world": child.world.model_copy(update={"tables": tables})}))
    shared, unshared = validate(root, edited, plan), validate(root, edited, plan, share=False)
    _same(shared, unshared)
    assert {"contract", "replay"} <= set(shared.failed)
    # ... and a reference solution that skips the restoration (the replay differs only there).
    skipped = with_solution(child, [c for c in child.reference_solution if not c.tool.startswith("read_")])
    _same(validate(root, skipped, plan), validate(root, skipped, plan, share=False))


def _rehash(env):
    env = env.model_copy(update={"id": ""})
    object.__setattr__(env, "id", content_hash(env.model_dump(mode="json", exclude={"id"})))
    return env
