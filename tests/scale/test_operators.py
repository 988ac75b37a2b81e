"""Every operator, applied to real example environments: the child is accepted by every check,
passes admission with the extended reference solution, and keeps request and verifier byte for byte."""

from __future__ import annotations

import pytest

from envtrain.core.admission import check_admission
from envtrain.scale.apply import registry_of
from envtrain.scale.operators import ORDER, library
from envtrain.scale.validate import CHECKS
from tests.scale.kit import example, scale, step

CASES = {
    "sharding": ("helpdesk_escalation", [step("sharding", "helpdesk.tickets", parts=3, by="interleave")]),
    "pagination": ("hr_leave_release_freeze", [step("pagination", "hr.employees", page_size=2)]),
    "summary-to-detail access": ("crm_pipeline_hygiene", [step("summary-to-detail access", "crm.deals", summary=["name"])]),
    "field references": ("inventory_morning_fulfillment", [step("field references", "inventory.orders", column="status")]),
    "numeric re-encoding": (
        "invoicing_payment_run",
        [
            step("numeric re-encoding", "invoicing.invoices", column="amount", factor=100, offset=37),
            step("numeric re-encoding", "L1", column="vendor_id", encoding="hex"),
        ],
    ),
    "export preparation": ("mail_invoice_routing", [step("export preparation", "mail.messages")]),
    "evidence dispersion": ("workspace_incident_summary", [step("evidence dispersion", "files", mode="text", column="content")]),
    "namespace bridges": ("projects_inbox_triage", [step("namespace bridges", "projects.cards")]),
    "source routing": ("hr_leave_release_freeze", [step("source routing", "hr.leave_requests", backends=3)]),
    "candidate intersection": ("calendar_roadmap_review", [step("candidate intersection", "calendar.events", decoys=2)]),
    "dependent lookups": (
        "crm_pipeline_hygiene",
        [
            step("dependent lookups", "crm.accounts"),
            step("summary-to-detail access", "crm.deals"),
            step("dependent lookups", "L4"),
        ],
    ),  # L4: the deals detail view, read by key: one key per record
    "multi-source exports": (
        "invoicing_payment_run",
        [
            step("index reconstruction", "invoicing.vendors"),
            step("staged release", "invoicing.invoices", stages=2),
            step("multi-source exports", "invoicing.payments", binds=("L1:index", "L2:stage")),
        ],
    ),
    "external-schema views": ("spreadsheet_expense_approvals", [step("external-schema views", "spreadsheet.cells")]),
    "archive views": ("mail_chat_handoff", [step("archive views", "mail.messages", archived=0.5)]),
    "version selection": (
        "crm_invoicing_followup",
        [step("version selection", "invoicing.invoices", column="status", versions=2)],
    ),
    "index reconstruction": ("spreadsheet_expense_approvals", [step("index reconstruction", "spreadsheet.sheets")]),
    "staged release": ("workspace_incident_summary", [step("staged release", "files", stages=3)]),
}


def test_every_operator_has_a_case_and_declares_itself() -> None:
    assert sorted(CASES) == sorted(ORDER) and len(ORDER) == 17
    for op in library().values():
        described = op.describe()
        assert all(described[k] for k in ("summary", "procedure", "binding", "release")), op.name
    assert list(library("basic")) == [
        "sharding",
        "pagination",
        "summary-to-detail access",
        "field references",
        "numeric re-encoding",
        "export preparation",
    ]


@pytest.mark.parametrize("operator", ORDER)
def test_operator_child_is_accepted(operator: str) -> None:
    name, steps = CASES[operator]
    root = example(name)
    child, plan, result = scale(root, *steps)
    assert result.accepted, result.diagnostics()
    assert [c.name for c in result.checks] == list(CHECKS)
    # The task stays: request and verifier byte-identical, original docs first, facts untouched.
    assert child.request == root.request
    assert child.verifier.model_dump_json() == root.verifier.model_dump_json()
    assert child.docs[: len(root.docs)] == root.docs
    assert {k: v for k, v in child.world.tables.items() if not k.startswith("res.")} == root.world.tables
    assert child.world.files == root.world.files
    # The original read path is gone, and the restoration is part of the reference solution.
    registry = registry_of(child)
    tools = {t.name for a in child.apps for t in a.tools}
    for resource in registry.resources:
        assert not set(resource.removed_tools) & tools
    assert operator in {s["operator"] for s in plan.model_dump()["steps"]}
    assert check_admission(child).admitted
    assert result.evidence["records"] and all(n > 0 for n in result.evidence["records"].values())


def test_restoration_extends_the_reference_solution() -> None:
    root = example("helpdesk_escalation")
    child, _, result = scale(root, step("pagination", "helpdesk.tickets", page_size=2))
    assert result.accepted
    calls = [(c.tool, c.arguments) for c in child.reference_solution]
    # Three pages of the five tickets, then the original writes; the original list_tickets is gone.
    assert [c for c in calls if c[0].startswith("read_")] == [
        ("read_tickets_1", {"cursor": "start"}),
        (calls[1][0], {"cursor": calls[1][1]["cursor"]}),
        (calls[2][0], calls[2][1]),
    ]
    assert calls[3:] == [(c.tool, c.arguments) for c in root.reference_solution[1:]]


def test_composition_binds_preparations_across_views() -> None:
    root = example("invoicing_payment_run")
    child, _, result = scale(root, *CASES["multi-source exports"][1])
    assert result.accepted, result.diagnostics()
    tools = [c.tool for c in child.reference_solution]
    # The payments export can only be prepared after the vendor index is rebuilt and an invoice stage released.
    prepare = tools.index("prepare_payments_3_export")
    assert tools.index("rebuild_vendors_1_index") < prepare and tools.index("advance_invoices_2_stage") < prepare
    args = child.reference_solution[prepare].arguments
    assert set(args) == {"token_1", "token_2"}
