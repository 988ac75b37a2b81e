"""Evolution: yield with a teacher, and diagnosis on planted faults (LegoEnv §3.5)."""

from __future__ import annotations

from envtrain.core.condition import Assertion
from envtrain.core.env import Environment
from envtrain.compose.builder import build
from envtrain.compose.context import clause
from envtrain.compose.evolve import Attempt, IssueLog, ReplayTeacher, diagnose, evolve_round
from envtrain.compose.skeleton import Skeleton

SK = Skeleton.model_validate({
    "domain": "support", "apps": ["helpdesk", "mail"], "intents": [{"app": "helpdesk", "kind": "escalate ticket"}],
    "rule": {"archetype": "threshold routing", "carrier": "policy mail"}, "dataset": "Ecdat/Wages", "chain": "t", "source": "t"})
FAILED = [Attempt(passed=False, failed=("x",))] * 8


def _built(pool, data):
    return build(SK, pool, data, seed=4)


def _doc(env: Environment) -> dict:
    return env.model_dump(mode="json", exclude={"id"})


def test_replay_teacher_solves_admitted_environments(pool, data) -> None:
    built = _built(pool, data)
    result = evolve_round([built.env], ReplayTeacher(), n=2)
    assert (result["solved"], result["yield"], result["diagnoses"]) == (1, 1.0, [])


def test_an_app_missing_the_tool_the_intent_needs_is_an_atom_repair(pool, data, tmp_path) -> None:
    built = _built(pool, data)
    doc = _doc(built.env)
    helpdesk = next(a for a in doc["apps"] if a["name"] == "helpdesk")
    helpdesk["tools"] = [t for t in helpdesk["tools"] if t["name"] != "escalate_ticket"]
    helpdesk["capabilities"]["escalate ticket"] = ["set_priority"]  # the card still claims the kind
    broken = Environment.parse(doc)
    attempts = ReplayTeacher().attempts(broken, 3)
    assert not any(a.passed for a in attempts)
    d = diagnose(broken, attempts, built.stated)
    assert (d.category, d.pathway) == ("world fault", "repair atom")
    assert d.target.startswith("server:helpdesk@") and "escalate_ticket" in d.reason
    log = IssueLog(tmp_path / "issues.json")
    result = evolve_round([broken], ReplayTeacher(), n=2, log=log, stated={broken.id: list(built.stated)})
    assert result["pathways"] == {"repair atom": 1}
    issues = log.read()
    assert len(issues) == 1 and issues[0]["envs"] == [broken.id] and issues[0]["status"] == "open"


def test_a_capability_the_pool_lacks_is_a_pool_supplement(pool, data) -> None:
    built = _built(pool, data)
    doc = _doc(built.env)
    helpdesk = next(a for a in doc["apps"] if a["name"] == "helpdesk")
    helpdesk["tools"] = [t for t in helpdesk["tools"] if t["name"] != "escalate_ticket"]
    del helpdesk["capabilities"]["escalate ticket"]
    d = diagnose(Environment.parse(doc), FAILED, built.stated)
    assert (d.category, d.pathway, d.target) == ("world fault", "supplement pool", "pool:escalate ticket on helpdesk")


def test_a_verifier_demanding_an_unstated_value_revises_the_builder(pool, data) -> None:
    built = _built(pool, data)
    doc = _doc(built.env)
    ticket = doc["world"]["tables"]["helpdesk.tickets"][0]["id"]
    doc["verifier"]["positive"].append(Assertion(
        name="comment cites the directive", entity="helpdesk.comments",
        where=(clause("ticket_id", "=", ticket), clause("body", "contains", "per directive QX-7")), count=">= 1").model_dump(mode="json"))
    doc["reference_solution"].append({"tool": "add_comment", "arguments": {"ticket_id": ticket, "body": "per directive QX-7"}})
    d = diagnose(Environment.parse(doc), FAILED, built.stated)
    assert (d.category, d.pathway, d.target) == ("verifier fault", "revise builder", "builder")
    assert "per directive QX-7" in d.reason


def test_a_sound_environment_the_teacher_fails_is_kept_hard(pool, data) -> None:
    built = _built(pool, data)
    writes = [i for i, c in enumerate(built.env.reference_solution) if c.tool == "escalate_ticket"]
    teacher = ReplayTeacher(skip=writes[:1])  # a teacher that misses one record
    result = evolve_round([built.env], teacher, n=2)
    assert result["yield"] == 0.0 and result["pathways"] == {"keep hard": 1}
