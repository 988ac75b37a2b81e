"""envtrain's gating operators (beyond RES's 17) on ordinary environments: a gated tool keeps its
arguments, effects and results, refuses until prepared, composes through token bindings with
views and other gates, and leaves the protected contract as it was."""

from __future__ import annotations

import pytest

from envtrain.core.admission import check_admission
from envtrain.core.session import Runtime
from envtrain.scale.apply import apply_plan, contract_hash, registry_of
from envtrain.scale.operators import EXTENSIONS, ORDER, PlanError, library, origin
from envtrain.scale.validate import CHECKS, validate
from tests.scale.kit import example, plan_for, scale, step


def test_the_gating_operators_are_labelled_as_envtrains_addition() -> None:
    assert len(ORDER) == 17 and not set(EXTENSIONS) & set(ORDER)
    assert list(library("full")) == list(ORDER + EXTENSIONS) and not set(EXTENSIONS) & set(library("basic"))
    for name in EXTENSIONS:
        op = library()[name]
        assert op.acts_on == "tool" and origin(name) == "envtrain (beyond RES's 17)"
        assert op.summary.startswith("[envtrain, beyond RES's 17]") and op.describe()["origin"] == origin(name)
    assert {origin(name) for name in ORDER} == {"RES App. D.1"}


@pytest.mark.parametrize(
    "gate, preparation",
    [
        (step("tool gating", "escalate_ticket"), [("enable_escalate_ticket", {})]),
        (step("staged tool activation", "escalate_ticket", stages=3), [("advance_escalate_ticket_setup", {})] * 3),
        (step("tool manifests", "escalate_ticket"), [("load_escalate_ticket_manifest", None)]),
    ],
)
def test_a_gated_write_tool_is_accepted_and_opened_at_the_head_of_the_solution(gate, preparation) -> None:
    root = example("helpdesk_escalation")
    child, _, result = scale(root, gate)
    assert result.accepted, result.diagnostics()
    assert [c.name for c in result.checks] == list(CHECKS) and result.evidence["gates"] == 1
    assert child.verifier.model_dump_json() == root.verifier.model_dump_json() and child.request == root.request
    assert child.world.tables["helpdesk.tickets"] == root.world.tables["helpdesk.tickets"]
    head = [(c.tool, c.arguments) for c in child.reference_solution[: len(preparation)]]
    assert [t for t, _ in head] == [t for t, _ in preparation]
    assert all(args == want for (_, args), (_, want) in zip(head, preparation) if want is not None)
    assert child.reference_solution[len(preparation) :] == root.reference_solution
    # The gate is the tool's first precondition, its own guards follow unchanged; the contract hashes it as before.
    registry = registry_of(child)
    tool = next(a for a in child.apps if a.name == "helpdesk").tool("escalate_ticket")
    original = next(a for a in root.apps if a.name == "helpdesk").tool("escalate_ticket")
    assert tool.preconditions[1:] == original.preconditions and tool.model_copy(update={"preconditions": ()}) == original.model_copy(
        update={"preconditions": ()}
    )
    assert contract_hash(child, registry) == contract_hash(root, None) == registry.contract
    assert check_admission(child).admitted
    assert any(d.title == "Access: tools" and "`escalate_ticket`" in d.body for d in child.docs)


def test_a_closed_gate_refuses_with_the_preparation_named_and_changes_nothing() -> None:
    root = example("helpdesk_escalation")
    child, _, result = scale(root, step("tool gating", "escalate_ticket"))
    assert result.accepted
    call = {"tool": "escalate_ticket", "arguments": root.reference_solution[1].arguments}
    with Runtime(child).session() as s:
        s.reset()
        before = s.world.content_hash()
        refused = s.step(call)
        assert not refused.ok and refused.error.value == "invalid_transition" and "enable_escalate_ticket" in refused.message
        assert s.world.content_hash() == before
        assert s.step({"tool": "enable_escalate_ticket", "arguments": {}}).ok
        opened = s.step(call)
    with Runtime(root).session() as s:
        s.reset()
        for _ in range(2):  # as many steps first: the world's clock ticks once per step
            s.step({"tool": "list_tickets", "arguments": {}})
        assert opened.ok and opened.output == s.step(call).output  # same arguments, effects and result


def test_gates_compose_with_views_and_with_each_other_through_tokens() -> None:
    root = example("helpdesk_escalation")
    child, _, result = scale(
        root,
        step("export preparation", "helpdesk.agents"),  # L1
        step("staged tool activation", "add_comment", binds=("L1:export",), stages=2),  # G2 needs the export's token
        step("tool gating", "escalate_ticket", binds=("G2:gate",)),  # G3 needs G2 open
        step("export preparation", "helpdesk.tickets", binds=("G3",)),  # L4: the tickets export needs G3's token
    )
    assert result.accepted, result.diagnostics()
    tools = [c.tool for c in child.reference_solution]
    assert tools[:6] == [
        "prepare_agents_1_export",
        "advance_add_comment_setup",
        "advance_add_comment_setup",
        "enable_escalate_ticket",
        "prepare_tickets_4_export",
        "read_tickets_4",
    ]
    tokens = [set(c.arguments) for c in child.reference_solution[1:5]]
    assert tokens == [{"token_1"}] * 4
    assert check_admission(child).admitted


def test_a_gate_bound_to_its_own_view_is_a_cycle_named_by_termination() -> None:
    root = example("helpdesk_escalation")
    _, _, result = scale(
        root,
        step("export preparation", "helpdesk.tickets"),  # L1
        step("tool gating", "escalate_ticket", binds=("L1",)),  # G2 needs L1's export token
        step("index reconstruction", "L1", binds=("G2",)),  # and L1 needs G2: views are one node each
    )
    assert "termination" in result.failed and any("cycle" in d for d in result.diagnostics())


def test_a_gated_child_scales_again_and_keeps_its_gates() -> None:
    root = example("helpdesk_escalation")
    child, _, first = scale(root, step("tool gating", "add_comment"))
    grandchild, _, second = scale(child, step("tool manifests", "add_comment", binds=("G1",)), step("pagination", "helpdesk.tickets", page_size=2))
    assert first.accepted and second.accepted, second.diagnostics()
    tool = next(a for a in grandchild.apps if a.name == "helpdesk").tool("add_comment")
    assert [g.entity for g in tool.preconditions[:2]] == ["res.gates", "res.gates"]
    assert contract_hash(grandchild, registry_of(grandchild)) == registry_of(child).contract


@pytest.mark.parametrize(
    "target, why",
    [
        ("list_tickets", "a record operator owns it"),  # a declarative read tool: moved by the record operators
        ("close_ticket", "the reference solution does not call it"),
        ("no_such_tool", "unknown tool 'no_such_tool'"),
    ],
)
def test_gating_refuses_tools_it_cannot_hold(target, why) -> None:
    root = example("helpdesk_escalation")
    with pytest.raises(PlanError, match=why):
        apply_plan(root, plan_for(root, step("tool gating", target)))


def test_workspace_file_reads_stay_with_the_record_operators() -> None:
    root = example("workspace_incident_summary")
    with pytest.raises(PlanError, match="a record operator owns it"):
        apply_plan(root, plan_for(root, step("tool gating", "read_file")))
    _, _, result = scale(root, step("tool gating", "move_file"), step("staged release", "files", stages=2))
    assert result.accepted, result.diagnostics()


def test_a_gate_left_open_is_named_by_bypass(monkeypatch) -> None:
    """A library fault: the gate is recorded and its guard put on the tool, but its W0 row opens it."""
    import envtrain.scale.apply as apply_module

    real = apply_module.gate_rows

    def open_rows(registry):
        return {k: [dict(r, current=r["last"]) for r in rows] for k, rows in real(registry).items()}

    monkeypatch.setattr(apply_module, "gate_rows", open_rows)
    root = example("helpdesk_escalation")
    _, _, result = scale(root, step("tool gating", "escalate_ticket"))
    assert result.failed == ("bypass",)
    assert any("escalate_ticket answers its gold call without enable_escalate_ticket" in d for d in result.diagnostics())


def test_a_gate_dropped_from_its_tool_is_named_by_bypass() -> None:
    """A child edited by hand: the gate's guard removed from the tool (the contract alone cannot see it)."""
    from tests.scale.test_faults import _edited

    root = example("helpdesk_escalation")
    child, plan, result = scale(root, step("tool gating", "escalate_ticket"))
    assert result.accepted
    data = child.model_dump(mode="json")
    helpdesk = next(a for a in data["apps"] if a["name"] == "helpdesk")
    tool = next(t for t in helpdesk["tools"] if t["name"] == "escalate_ticket")
    tool["preconditions"] = tool["preconditions"][1:]
    bad = validate(root, _edited(child, apps=data["apps"]), plan)
    assert "bypass" in bad.failed and "contract" not in bad.failed
    assert any("not held by its gate" in d for d in bad.diagnostics())
