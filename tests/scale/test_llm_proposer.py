"""The LLM proposer over real HTTP (the project's own OpenAI-compatible server, answering with
scripted texts, since a random tiny model never writes a plan): answers that are not plans, or
plans that do not apply, go back as diagnostics; a valid plan is accepted; costs are recorded."""

from __future__ import annotations

import pytest

from envtrain.agent.parsers import parse_completion
from envtrain.agent.server import serve
from envtrain.agent.types import Generation
from envtrain.scale.lineage import ScaleConfig, extend
from envtrain.scale.llm import LLMProposer, parse_answer, prompt
from envtrain.scale.propose import Attempt, ProposalError
from tests.scale.kit import example

ANSWERS = [
    "I would shard the tickets first.",
    '{"steps": [{"operator": "teleportation", "target": "helpdesk.tickets"}]}',
    'Here is the plan:\n```json\n{"steps": [{"operator": "pagination", "target": "helpdesk.tickets", '
    '"params": {"page_size": 2}}]}\n```',
]


class PlanWriter:
    """A policy that says scripted answers in turn and keeps the prompts it was given."""

    name = "plan-writer"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.prompts: list[str] = []

    async def generate(self, messages, tools, params, ctx):
        self.prompts.append(messages[-1]["content"])
        text = self.texts[min(len(self.prompts), len(self.texts)) - 1]
        return [
            Generation(
                turn=parse_completion(text, "hermes"), text=text, finish_reason="stop", prompt_tokens=100, completion_tokens=20
            )
        ]

    async def aclose(self) -> None:
        return None


def test_repair_loop_over_http_until_a_valid_plan() -> None:
    root = example("helpdesk_escalation")
    writer = PlanWriter(ANSWERS)
    server = serve(writer)
    try:
        proposer = LLMProposer(url=server.url, model="plan-writer", retries=0)
        config = ScaleConfig(proposer="llm", llm_url=server.url, budget=4)
        ext = extend(root, proposer, config)
    finally:
        server.close()
    assert ext.child is not None and ext.validation.accepted
    assert [a["failed"] for a in ext.attempts] == [["plan"], ["plan"], []]
    assert "not a JSON plan" in ext.attempts[0]["diagnostics"][0]
    assert "unknown operator 'teleportation'" in ext.attempts[1]["diagnostics"][0]
    # Each retry's prompt carries the diagnostics of the attempts before it.
    assert "not a JSON plan" in writer.prompts[1] and "teleportation" in writer.prompts[2]
    assert ext.proposer_cost == {"calls": 3, "tokens": 360, "seconds": pytest.approx(ext.proposer_cost["seconds"])}
    assert ext.plan.proposer == "llm" and ext.plan.parent == root.id


def test_prompt_states_task_structure_and_catalogue() -> None:
    root = example("invoicing_payment_run")
    text = prompt(root, [], "basic")
    assert root.request in text and "invoicing.invoices: 8 records" in text
    assert "- pagination:" in text and "page_size" in text and "- staged release" not in text


def test_answers_are_validated_against_the_plan_schema() -> None:
    root = example("helpdesk_escalation")
    plan = parse_answer(
        '{"steps": [{"operator": "sharding", "target": "helpdesk.tickets", "params": {"parts": 2}}], "parent": "x"}',
        root,
        release=True,
    )
    assert plan.parent == root.id and plan.release_dependencies
    for bad, why in [
        ("[1, 2]", "not a JSON"),
        ('{"steps": []}', "at least 1"),
        ('{"steps": [{"target": "L1"}]}', "operator"),
        ('{"steps": [{"operator": "x", "target": "L1", "extra": 1}]}', "Extra inputs"),
    ]:
        with pytest.raises(ProposalError, match=why):
            parse_answer(bad, root, release=False)


def test_unreachable_endpoint_is_a_failed_execution() -> None:
    proposer = LLMProposer(url="http://127.0.0.1:9/v1", model="m", retries=0, timeout=2)
    with pytest.raises(ProposalError, match="cannot be reached"):
        proposer.propose(example("helpdesk_escalation"), [Attempt(None, False, ("plan",), ("plan: x",))])
