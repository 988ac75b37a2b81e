"""The unstated-value guard catches a verifier that demands what nobody stated (LegoEnv's most common fault)."""

from __future__ import annotations

from envtrain.core.condition import Assertion
from envtrain.core.env import Call, Environment
from envtrain.compose.builder import build
from envtrain.compose.context import clause
from envtrain.compose.guard import unstated_values
from envtrain.compose.skeleton import Skeleton

SK = Skeleton.model_validate({
    "domain": "support", "apps": ["helpdesk", "spreadsheet"], "intents": [{"app": "helpdesk", "kind": "add comment"}],
    "rule": {"archetype": "compliance flag", "carrier": "policy sheet"}, "dataset": "Ecdat/Wages", "chain": "t", "source": "t"})


def _built(pool, data):
    return build(SK, pool, data, seed=1)


def _with(env: Environment, assertion: Assertion, call: Call) -> Environment:
    doc = env.model_dump(mode="json", exclude={"id"})
    doc["verifier"]["positive"].append(assertion.model_dump(mode="json"))
    doc["reference_solution"].append(call.model_dump(mode="json"))
    return Environment.parse(doc)


def test_a_built_environment_is_clean(pool, data) -> None:
    built = _built(pool, data)
    assert unstated_values(built.env, built.stated) == []


def test_a_planted_unstated_value_is_caught(pool, data) -> None:
    built = _built(pool, data)
    ticket = built.env.world.tables["helpdesk.tickets"][0]["id"]
    # the verifier wants a phrase that the request, the policy sheet and the world never mention
    planted = Assertion(name="ticket note cites the directive", entity="helpdesk.comments",
                        where=(clause("ticket_id", "=", ticket), clause("body", "contains", "per directive QX-7")), count=">= 1")
    env = _with(built.env, planted, Call(tool="add_comment", arguments={"ticket_id": ticket, "body": "done per directive QX-7"}))
    faults = unstated_values(env, built.stated)
    assert faults == ["ticket note cites the directive: 'per directive QX-7'"]
    # once the carrier states it, the same verifier is fine
    assert unstated_values(env, [*built.stated, "Cite it as per directive QX-7."]) == []


def test_values_a_tool_sets_itself_or_the_world_holds_pass(pool, data) -> None:
    built = _built(pool, data)
    ticket = built.env.world.tables["helpdesk.tickets"][0]
    escalated = Assertion(name="escalated", entity="helpdesk.tickets",
                          where=(clause("id", "=", ticket["id"]), clause("status", "=", "escalated")), count="= 1")
    env = _with(built.env, escalated, Call(tool="escalate_ticket", arguments={"ticket_id": ticket["id"], "team": "tier2"}))
    assert unstated_values(env, built.stated) == []  # 'escalated' is the tool's effect, not an argument
    customer = Assertion(name="mentions the customer", entity="helpdesk.comments",
                         where=(clause("body", "contains", ticket["customer"]),), count=">= 1")
    env = _with(built.env, customer, Call(tool="add_comment", arguments={"ticket_id": ticket["id"], "body": ticket["customer"]}))
    assert unstated_values(env, built.stated) == []  # the world states it
