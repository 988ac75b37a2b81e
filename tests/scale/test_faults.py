"""Planted faults of each kind are rejected, and the diagnostics name the right check.

Faulty operators stand in for a buggy proposer or library: Apply runs them, replay rebuilds the
same faulty candidate, and the check that owns the fault must catch it.
"""

from __future__ import annotations

from types import MappingProxyType

from envtrain.core import Environment
from envtrain.core.io import content_hash
from envtrain.scale.apply import with_solution
from envtrain.scale.model import Binding, Export
from envtrain.scale.operators import library
from envtrain.scale.operators.access import ExportPreparation, Pagination, StagedRelease
from envtrain.scale.operators.encoding import FieldReferences
from envtrain.scale.operators.partition import Sharding
from envtrain.scale.validate import validate
from tests.scale.kit import example, scale, step


def _with(*operators) -> MappingProxyType:
    return MappingProxyType({**library(), **{op.name: op for op in operators}})


class LosingSharding(Sharding):
    def apply(self, work, leaf, params, binds):
        work.payloads[leaf.id] = work.payloads[leaf.id][:-1]  # a record falls between the shards
        super().apply(work, leaf, params, binds)


class DuplicatingSharding(Sharding):
    def apply(self, work, leaf, params, binds):
        rows = work.payloads[leaf.id]
        work.payloads[leaf.id] = rows + rows[:1]  # a record lands in two shards
        super().apply(work, leaf, params, binds)


class DanglingReferences(FieldReferences):
    def apply(self, work, leaf, params, binds):
        super().apply(work, leaf, params, binds)
        lookup = max(work.leaves.values(), key=lambda v: int(v.id[1:]))
        work.payloads[lookup.id] = work.payloads[lookup.id][1:]  # one reference resolves to nothing


class SelfBoundExport(ExportPreparation):
    def apply(self, work, leaf, params, binds):
        own = Binding(source=leaf.id, layer="export", arg="token_1")  # the export needs its own token
        work.update_leaf(leaf, layers=leaf.layers + (Export(token=work.token("tk"), requires=(own,)),))


class EndlessStages(StagedRelease):
    def apply(self, work, leaf, params, binds):
        super().apply(work, leaf, params, binds)
        stage = work.leaves[leaf.id].layer("stage")
        layers = tuple(
            layer.model_copy(update={"stages": 1000}) if layer.kind == "stage" else layer for layer in work.leaves[leaf.id].layers
        )
        work.update_leaf(work.leaves[leaf.id], layers=layers)
        assert stage is not None


class LeakyPagination(Pagination):
    def apply(self, work, leaf, params, binds):
        super().apply(work, leaf, params, binds)
        resource = work.resources[leaf.resource]
        work.resources[leaf.resource] = resource.model_copy(update={"removed_tools": ()})  # list_tickets stays


def _rejected(operators, *steps, name="helpdesk_escalation"):
    _, _, result = scale(example(name), *steps, operators=operators)
    assert not result.accepted
    return result


def test_lost_record_is_named_by_records() -> None:
    result = _rejected(_with(LosingSharding()), step("sharding", "helpdesk.tickets", parts=2))
    assert "records" in result.failed
    assert any("1 record(s) lost" in d for d in result.diagnostics())


def test_duplicated_record_is_named_by_records() -> None:
    result = _rejected(_with(DuplicatingSharding()), step("sharding", "helpdesk.tickets", parts=2))
    assert "records" in result.failed
    assert any("duplicated" in d for d in result.diagnostics())


def test_dangling_reference_is_named_by_references() -> None:
    result = _rejected(_with(DanglingReferences()), step("field references", "helpdesk.tickets", column="priority"))
    assert "references" in result.failed
    assert any(d.startswith("references:") and "refused" in d for d in result.diagnostics())


def test_preparation_cycle_is_named_by_termination() -> None:
    result = _rejected(_with(SelfBoundExport()), step("export preparation", "helpdesk.tickets"))
    assert "termination" in result.failed
    assert any("cycle" in d for d in result.diagnostics())


def test_preparation_that_never_finishes_is_named_by_termination() -> None:
    result = _rejected(_with(EndlessStages()), step("staged release", "helpdesk.tickets", stages=2))
    assert result.failed[0] == "termination" or "termination" in result.failed
    assert any("did not finish within" in d for d in result.diagnostics())


def test_bypass_left_open_is_named_by_bypass() -> None:
    result = _rejected(_with(LeakyPagination()), step("pagination", "helpdesk.tickets", page_size=2))
    assert "bypass" in result.failed
    assert any("list_tickets still reads helpdesk.tickets" in d for d in result.diagnostics())


def _edited(child: Environment, **changes) -> Environment:
    data = child.model_dump(mode="json", exclude={"id"})
    data.update(changes)
    return Environment.parse(data)


def test_edited_verifier_is_named_by_contract() -> None:
    root = example("helpdesk_escalation")
    child, plan, result = scale(root, step("pagination", "helpdesk.tickets", page_size=2))
    assert result.accepted
    verifier = child.verifier.model_dump(mode="json")
    verifier["negative"] = verifier["negative"][:-1]  # drop a V- assertion: an easier task
    bad = validate(root, _edited(child, verifier=verifier), plan)
    assert not bad.accepted and "contract" in bad.failed
    assert "contract: the verifier changed" in bad.diagnostics()


def test_hand_edited_child_is_named_by_replay() -> None:
    root = example("helpdesk_escalation")
    child, plan, _ = scale(root, step("sharding", "helpdesk.tickets", parts=2))
    tables = {k: [dict(r) for r in v] for k, v in child.model_dump(mode="json")["world"]["tables"].items()}
    view = next(k for k in tables if k.startswith("res."))
    tables[view][0]["subject"] = "edited by hand"
    bad = validate(root, _edited(child, world={**child.model_dump(mode="json")["world"], "tables": tables}), plan)
    assert "replay" in bad.failed and "records" in bad.failed


def test_reference_solution_that_skips_the_restoration_fails_admission_or_replay() -> None:
    root = example("helpdesk_escalation")
    child, plan, _ = scale(root, step("export preparation", "helpdesk.tickets"))
    bad = with_solution(child, [c for c in child.reference_solution if c.tool != "prepare_tickets_1_export"])
    result = validate(root, bad, plan)
    assert "replay" in result.failed and "admission" in result.failed


def test_a_changed_fact_is_named_by_contract() -> None:
    root = example("helpdesk_escalation")
    child, plan, _ = scale(root, step("pagination", "helpdesk.tickets", page_size=2))
    tables = child.model_dump(mode="json")["world"]["tables"]
    tables["helpdesk.tickets"][3]["priority"] = "low"
    result = validate(root, _edited(child, world={**child.model_dump(mode="json")["world"], "tables": tables}), plan)
    assert "contract" in result.failed
    assert content_hash(tables["helpdesk.tickets"]) != content_hash(root.world.tables["helpdesk.tickets"])
