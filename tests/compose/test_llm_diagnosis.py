"""The LLM diagnosis agent (LegoEnv §3.5) over real HTTP: the project's own OpenAI-compatible server answers
with scripted verdicts (a random tiny model never writes one). The programmatic checks run first; the agent
reads only what they call hard; a refused answer goes back with its reason; an accepted verdict is recorded
with source "llm" in the manifest, the issue log and the report, and a repair_atom verdict becomes a repair
only through the programmatic repairer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
import yaml
from pydantic import ValidationError
from rich.console import Console
from typer.testing import CliRunner

from envtrain.agent.parsers import parse_completion
from envtrain.agent.server import serve
from envtrain.agent.types import Generation
from envtrain.apps import load_app
from envtrain.core.condition import Assertion
from envtrain.core.env import Environment
from envtrain.compose.atoms import spec_hash
from envtrain.compose.builder import build
from envtrain.compose.cli import compose_app, print_summary
from envtrain.compose.context import clause
from envtrain.compose.evolve import Attempt
from envtrain.compose.llm_diagnosis import Case, check_answer, diagnose_first, messages
from envtrain.compose.pipeline import ComposeConfig, run
from envtrain.compose.repairs import RepairStore
from tests.compose.conftest import TEST_DATASETS
from tests.compose.test_evolve import FAILED, SK

MISLEADING = "Escalate a ticket to a specialist team, named as the policy names it (Tier 2, Billing or Security)."
REASON = ("The escalate_ticket description asks for display names such as Tier 2 while its team parameter only "
          "takes tier2, billing or security, so a teacher that follows it fails every call.")
HARD = "The environment is consistent; the teacher made no tool call at all."


def misleading_helpdesk() -> dict:
    """The planted fault the checks cannot see: π calls escalate_ticket correctly and passes admission, but the
    tool's description tells an agent to pass values its parameter refuses."""
    doc = load_app("helpdesk").model_dump(mode="json")
    next(t for t in doc["tools"] if t["name"] == "escalate_ticket")["description"] = MISLEADING
    return doc


class Diagnostician:
    """Scripted verdicts: a repair of escalate_ticket where π uses it, else a hard task; the first answer of
    every exchange is refused (free-form code for the repair, prose for the hard task)."""

    name = "diagnostician"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def generate(self, messages, tools, params, ctx):
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        retry = "Your previous answers were refused" in prompt
        solution = prompt.split("Reference solution")[1].split("Teacher:")[0]
        if "escalate_ticket(" in solution:
            atom_hash = re.search(r"- server:helpdesk@([0-9a-f]+):", prompt).group(1)  # the bare hash names it too
            answer = {"verdict": "world_fault", "pathway": "repair_atom", "atom": atom_hash, "reason": REASON,
                      "repair": {"faulty_tool": "escalate_ticket"}}
            if not retry:
                answer["patch"] = "def escalate_ticket(ticket_id, team): return db.update(team.lower())"
            text = json.dumps(answer)
        else:
            text = json.dumps({"verdict": "hard_task", "pathway": "keep_hard", "atom": None, "reason": HARD}) if retry \
                else "The environment looks sound to me."
        return [Generation(turn=parse_completion(text, "hermes"), text=text, finish_reason="stop", prompt_tokens=900,
                           completion_tokens=60)]

    async def aclose(self) -> None:
        return None


def manifest(out: Path) -> dict[int, dict]:
    return {e["index"]: e for e in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())}


def test_verdicts_are_validated_recorded_and_repaired_through_the_programmatic_repairer(tmp_path: Path, card_cache: str) -> None:
    atom_hash = spec_hash(load_app("helpdesk").model_validate(misleading_helpdesk()))
    atom = f"server:helpdesk@{atom_hash}"
    atoms = tmp_path / "atoms.yaml"
    atoms.write_text(yaml.safe_dump({"servers": [misleading_helpdesk()]}))
    out = tmp_path / "run"
    model = Diagnostician()
    server = serve(model)
    try:
        config = ComposeConfig(n=4, seed=0, out=out, apps=("helpdesk", "mail"), datasets=TEST_DATASETS, workers=1,
                               cache_dir=Path(card_cache), atoms=atoms, teacher="noop", attempts=2, diagnose_llm=server.url,
                               diagnose_model="diagnostician", diagnose_budget=2)
        report = run(config)
        entries = manifest(out)
        assert [e["status"] for e in entries.values()] == ["admitted"] * 4
        assert entries[0]["action"] == "escalate ticket"  # the one environment the planted fault reaches

        # the issue log: one issue, from the agent, repaired by the programmatic repairer
        (repair,) = RepairStore(out / "repairs.json").read()
        (issue,) = json.loads((out / "issues.json").read_text())
        old = issue["envs"][0]
        assert issue == {"target": atom, "pathway": "repair atom", "category": "world fault", "reason": REASON, "source": "llm",
                         "envs": [old], "status": "repaired", "repair": repair.id, "fix": repair.fix}
        assert (repair.atom, repair.source, repair.envs) == (atom, "llm", (old,))
        assert repair.tools == {"escalate_ticket": load_app("helpdesk").tool("escalate_ticket").model_dump(mode="json")}
        assert repair.fix == "restore the description of escalate_ticket from the helpdesk reference spec"

        # the rebuilt environment has the reference tool; the three others are kept hard on the agent's word
        assert entries[0]["id"] != old and entries[0]["repairs"] == [repair.id]
        env = Environment.load(out / "envs" / f"{entries[0]['id']}.json")
        assert next(a for a in env.apps if a.name == "helpdesk").tool("escalate_ticket").description != MISLEADING
        for i in (1, 2, 3):
            teacher = entries[i]["teacher"]
            assert teacher["diagnosis"] == {"env_id": entries[i]["id"], "category": "hard", "pathway": "keep hard", "target": "none",
                                            "reason": HARD, "evidence": {}, "source": "llm"}
            exchange = teacher["diagnosis_llm"]
            assert (exchange["model"], exchange["answers"]) == ("diagnostician", 2)
            assert exchange["rejected"] == ['the answer is not a JSON object {"verdict": ..., "pathway": ..., "atom": ..., "reason": ...}']
            assert exchange["verdict"] == {"verdict": "hard_task", "pathway": "keep_hard", "atom": None, "reason": HARD, "repair": None}

        # the report counts verdicts, pathways and sources; free-form code was refused by the schema
        diagnosis = report["teacher"]["diagnosis"]
        assert diagnosis["by_verdict"] == {"world fault": 1, "hard": 3}
        assert diagnosis["by_pathway"] == {"repair atom": 1, "keep hard": 3}
        assert diagnosis["by_source"] == {"llm": 4}
        assert {k: diagnosis["llm"][k] for k in ("asked", "replayed", "answers", "accepted_first", "no_verdict", "models")} == \
            {"asked": 4, "replayed": 0, "answers": 8, "accepted_first": 0, "no_verdict": 0, "models": ["diagnostician"]}
        assert diagnosis["llm"]["refused_answers"] == {"the answer is not a JSON object {\"verdict\"": 3, "the object does not fit the schema": 1}
        assert report["evolution"]["issues_by_source"] == {"llm": 1} and report["evolution"]["rebuilt"] == 1
        assert report["teacher"]["after_repairs"]["environments"] == 4
        console = Console(record=True, width=240)
        print_summary(report, console)
        printed = console.export_text()
        for line in ("verdict: world fault", "pathway: repair atom", "diagnosed by: llm", "issues {'repaired': 1} (diagnosed by llm 1)",
                     "diagnosis agent (diagnostician): 4 environments asked (0 verdicts replayed), 8 answers (0 accepted first time)"):
            assert line in printed, line

        # the prompt carries what the agent needs, and a refused answer goes back with its reason
        escalation = [p for p in model.prompts if "escalate_ticket(" in p.split("Reference solution")[1].split("Teacher:")[0]]
        assert len(model.prompts) == 8 and len(escalation) == 2
        assert "patch: Extra inputs are not permitted" in escalation[1] and "refused" not in escalation[0]
        for part in ("Request:", "Rule text (in its carrier:", "W0 (now is", "- V+ ", "Teacher: 2 attempts, none accepted",
                     f"- {atom}:", f"tool escalate_ticket(team: tier2|billing|security, ticket_id: integer, reason?: string) [update]: {MISLEADING}",
                     "calls: none"):
            assert part in escalation[0], part

        # a rerun replays the accepted verdicts; the rebuilt environment is asked, and a repair of an atom
        # that is already its reference spec is refused until the budget is spent: the checks' verdict stands
        asked = len(model.prompts)
        report = run(config)
        entries = manifest(out)
        assert len(model.prompts) == asked + 2
        assert all(entries[i]["teacher"]["diagnosis_llm"]["replayed"] for i in (1, 2, 3))
        rebuilt = entries[0]["teacher"]
        assert rebuilt["diagnosis"]["source"] == "programmatic" and rebuilt["diagnosis"]["pathway"] == "keep hard"
        assert rebuilt["diagnosis_llm"]["error"] == "no acceptable verdict in 2 answers"
        refused = rebuilt["diagnosis_llm"]["rejected"]
        assert refused[0].startswith("the object does not fit the schema: patch: Extra inputs are not permitted")
        assert refused[1].startswith("no repair can be derived from it: this version of helpdesk is its reference spec")
        llm = report["teacher"]["diagnosis"]["llm"]
        assert (llm["asked"], llm["replayed"], llm["no_verdict"]) == (1, 3, 1)
        assert report["teacher"]["diagnosis"]["by_source"] == {"programmatic": 1, "llm": 3}
        assert len(RepairStore(out / "repairs.json").read()) == 1
    finally:
        server.close()


class RecordingAgent:
    """Stands in for the agent where only the order of the checks is under test."""

    def __init__(self) -> None:
        self.cases: list[Case] = []

    def diagnose(self, case, programmatic, recorded=None):
        self.cases.append(case)
        return programmatic.model_copy(update={"source": "llm"}), {"model": "recording", "answers": 1, "rejected": []}


def test_the_programmatic_checks_run_first(pool, data) -> None:
    built = build(SK, pool, data, seed=4)
    doc = built.env.model_dump(mode="json", exclude={"id"})
    ticket = doc["world"]["tables"]["helpdesk.tickets"][0]["id"]
    doc["verifier"]["positive"].append(Assertion(
        name="comment cites the directive", entity="helpdesk.comments",
        where=(clause("ticket_id", "=", ticket), clause("body", "contains", "per directive QX-7")), count=">= 1").model_dump(mode="json"))
    doc["reference_solution"].append({"tool": "add_comment", "arguments": {"ticket_id": ticket, "body": "per directive QX-7"}})
    faulty = Environment.parse(doc)
    agent = RecordingAgent()
    found, exchange = diagnose_first(Case.of(faulty, FAILED), agent, built.stated)
    assert (found.category, found.source, exchange, agent.cases) == ("verifier fault", "programmatic", None, [])

    found, exchange = diagnose_first(Case.of(built.env, FAILED, built=built, pool=pool, data=data), agent, built.stated)
    assert (found.category, found.source, exchange["model"]) == ("hard", "llm", "recording")
    assert len(agent.cases) == 1 and agent.cases[0].rule == built.parts["rule"]
    assert [a.id.split(":")[0] for a in agent.cases[0].atoms] == ["server", "server", "intent", "rule", "data"]
    assert diagnose_first(Case.of(built.env, FAILED), None, built.stated)[1] is None  # no endpoint: the checks alone


def _case(pool, data, misleading: bool = True) -> tuple[Case, str]:
    built = build(SK, pool, data, seed=4)
    doc = built.env.model_dump(mode="json", exclude={"id"})
    if misleading:
        doc["apps"] = [misleading_helpdesk() if a == "helpdesk" or (isinstance(a, dict) and a["name"] == "helpdesk") else a
                       for a in doc["apps"]]
    env = Environment.parse(doc)
    helpdesk = next(a for a in env.apps if a.name == "helpdesk")
    attempts = [Attempt(passed=False, failed=("ticket escalated",), calls=('escalate_ticket({"team": "Tier 2"})',),
                        errors=('{"error": "team must be one of tier2, billing, security"}',), stop="done")]
    return Case.of(env, attempts, built=built, pool=pool, data=data), f"server:helpdesk@{spec_hash(helpdesk)}"


def verdict(**kw) -> str:
    answer = {"verdict": "world_fault", "pathway": "repair_atom", "atom": None, "reason": REASON}
    answer.update(kw)
    return json.dumps({k: v for k, v in answer.items() if v != "-"})


@pytest.mark.parametrize(("answer", "refusal"), [
    ("```json\n{\"verdict\": \"hard\"}\n```", "the object does not fit the schema: verdict: Input should be 'verifier_fault'"),
    (verdict(reason="-"), "the object does not fit the schema: reason: Field required"),
    (verdict(atom="-", pathway="keep_hard", verdict="hard_task"), "the object does not fit the schema: atom: Field required"),
    (verdict(pathway="keep_hard"), "pathway keep_hard does not follow from world_fault (it takes repair_atom or supplement_pool or revise_builder)"),
    (verdict(verdict="verifier_fault", pathway="repair_atom"), "pathway repair_atom does not follow from verifier_fault"),
    (verdict(atom="0123456789abcdef", repair={"faulty_tool": "escalate_ticket"}), "atom '0123456789abcdef' is not one of this environment's atoms"),
    (verdict(pathway="revise_builder", repair={"faulty_tool": "escalate_ticket"}), "repair is only for pathway repair_atom"),
    (verdict(repair={"faulty_tool": "escalate_ticket"}), "a repair_atom verdict names the server atom to repair as atom"),
    (verdict(atom="{atom}"), 'a repair_atom verdict needs "repair"'),
    (verdict(atom="{atom}", repair={"faulty_tool": "x", "missing_tool": "y"}), "the object does not fit the schema: repair: give exactly one of"),
    (verdict(atom="{atom}", repair={"missing_tool": "escalate_ticket"}),
     "no repair can be derived from it: helpdesk has the tool 'escalate_ticket'; a tool that is there but wrong is a faulty_tool"),
    (verdict(atom="{atom}", repair={"faulty_tool": "set_priority"}),
     "no repair can be derived from it: the tool 'set_priority' of helpdesk is exactly its reference spec"),
    (verdict(atom="{atom}", repair={"code": "def f(): pass"}), "the object does not fit the schema: repair.code: Extra inputs are not permitted"),
])
def test_answers_that_break_the_schema_or_the_case_are_refused_with_a_reason(pool, data, answer: str, refusal: str) -> None:
    case, atom = _case(pool, data)
    with pytest.raises(ValueError) as info:
        check_answer(answer.replace("{atom}", atom), case)
    assert str(info.value).startswith(refusal), str(info.value)


def test_an_accepted_verdict_is_a_diagnosis_the_repairer_can_act_on(pool, data) -> None:
    case, atom = _case(pool, data)
    found, answer = check_answer(verdict(atom=atom.rsplit("@", 1)[1], repair={"faulty_tool": "escalate_ticket"}), case)
    assert (found.category, found.pathway, found.target, found.source) == ("world fault", "repair atom", atom, "llm")
    assert answer.repair is not None and answer.repair.faulty_tool == "escalate_ticket"
    assert found.evidence == {"faulty_tool": "escalate_ticket", "atom": atom} and found.reason == REASON
    found, _ = check_answer(verdict(verdict="verifier_fault", pathway="revise_builder"), case)
    assert (found.category, found.pathway, found.target) == ("verifier fault", "revise builder", "builder")
    found, _ = check_answer(verdict(pathway="supplement_pool", atom=atom), case)
    assert (found.pathway, found.target) == ("supplement pool", f"pool:{atom}")
    chat = messages(case, found, [("{}", "the object does not fit the schema: verdict: Field required")])
    assert chat[0]["role"] == "system" and '"verdict": "verifier_fault|world_fault|hard_task"' in chat[0]["content"]
    user = chat[1]["content"]
    assert case.rule in user and 'escalate_ticket({"team": "Tier 2"})' in user and "team must be one of" in user
    assert user.endswith("Answer again with one JSON object that fixes this.")


def test_the_agent_needs_a_teacher_and_evolution() -> None:
    with pytest.raises(ValidationError, match="the diagnosis agent reads the teacher's failed attempts"):
        ComposeConfig(n=1, out=Path("x"), diagnose_llm="http://127.0.0.1:9/v1")
    with pytest.raises(ValidationError, match="the diagnosis agent is part of evolution"):
        ComposeConfig(n=1, out=Path("x"), diagnose_llm="http://127.0.0.1:9/v1", teacher="noop", evolve=False)
    same = ComposeConfig(n=1, out=Path("x"), teacher="noop", llm="http://h:8000/v1/", llm_model="m", diagnose_llm="http://h:8000/v1")
    assert same.diagnosis_model == "m"
    assert same.model_copy(update={"diagnose_llm": "http://other/v1"}).diagnosis_model is None


def test_the_cli_refuses_an_agent_without_a_teacher(tmp_path: Path, card_cache: str) -> None:
    root = typer.Typer()
    root.add_typer(compose_app, name="compose")
    result = CliRunner().invoke(root, ["compose", "--n", "1", "--out", str(tmp_path), "--cache", card_cache,
                                       "--diagnose-llm", "http://127.0.0.1:9/v1"])
    assert result.exit_code == 2
    assert "error: the diagnosis agent reads the teacher's failed attempts: give --teacher as well" in result.output


def test_an_unreachable_endpoint_leaves_the_checks_verdict(tmp_path: Path, card_cache: str) -> None:
    config = ComposeConfig(n=1, seed=0, out=tmp_path / "run", datasets=TEST_DATASETS, workers=1, cache_dir=Path(card_cache),
                           teacher="noop", attempts=1, diagnose_llm="http://127.0.0.1:9/v1", diagnose_model="m")
    report = run(config)
    (entry,) = manifest(tmp_path / "run").values()
    assert entry["teacher"]["diagnosis"]["source"] == "programmatic"
    assert entry["teacher"]["diagnosis_llm"]["error"].startswith("the endpoint cannot be reached")
    assert report["teacher"]["diagnosis"]["llm"]["no_verdict"] == 1
