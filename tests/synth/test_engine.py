"""The LLM synthesis engine over real HTTP: the project's own OpenAI-compatible server answers with
scripted texts (a random tiny model never writes an app). Rejected answers go back with their
diagnostics and the model revises; the revised app is admitted, judged by the Table 18 rubric, and
played by the oracle (1.0) and a no-op policy (0.0) through ``envtrain collect``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envtrain.agent.parsers import parse_completion
from envtrain.agent.server import serve
from envtrain.agent.types import Generation
from envtrain.apps.handlers import builtin_handlers
from envtrain.sandbox import unavailable
from envtrain.sandbox.shell import shell_handlers
from envtrain.synth.catalogue import load_catalogue, select
from envtrain.synth.cli import synth_cmd
from envtrain.synth.engine import synthesize
from envtrain.synth.llm import ChatClient
from envtrain.synth.rubric import parse_score
from tests.agent.http_kit import closed_port
from tests.synth.kit import answer_text, hidden, planted

BACKEND = "bwrap" if unavailable("bwrap") is None else "local"
GOOD = answer_text()
JUDGE_3_3_3 = '{"solvability": 3, "validation": 3, "consistency": 3, "reasons": "solvable and fully checked"}'


class Writer:
    """Says the scripted app answers in turn; answers a judge's request with the scripted score."""

    name = "app-writer"

    def __init__(self, answers: list[str], judge: str = JUDGE_3_3_3) -> None:
        self.answers = answers
        self.judge = judge
        self.requests: list[list[dict]] = []

    async def generate(self, messages, tools, params, ctx):
        self.requests.append(messages)
        if "audit synthesized agent tasks" in messages[0]["content"]:
            text = self.judge
        else:
            text = self.answers[min(sum("audit" not in m[0]["content"] for m in self.requests), len(self.answers)) - 1]
        return [Generation(turn=parse_completion(text, "hermes"), text=text, finish_reason="stop", prompt_tokens=100, completion_tokens=50)]

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def handlers() -> dict:
    return {**builtin_handlers(), **shell_handlers(BACKEND)}


def test_revision_loop_over_http(handlers: dict) -> None:
    writer = Writer([answer_text(code=planted(4)), GOOD])
    card = select(load_catalogue(), "claw-12")[0]
    with serve(writer) as server:
        client = ChatClient(server.url, "app-writer", retries=0)
        result = synthesize(card, client, backend=BACKEND, handlers=handlers, revisions=2)
    assert [a.stage for a in result.attempts] == ["rules", "accepted"]
    assert result.env is not None and result.admission is not None and result.admission.admitted
    assert result.attempts[0].diagnostics == [
        ("Table 15 rule 4 (session updates are atomic (a temporary file, then os.replace)): _save (line 21): "
         "writes a file in place; write a temporary file and os.replace it over the target")]
    # The revision request carries the first answer and what was wrong with it.
    second = writer.requests[1]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert "Table 15 rule 4" in second[3]["content"] and "rejected at the rules stage" in second[3]["content"]
    assert "Automated Reimbursement Reconciliation" in second[1]["content"]
    settings = result.env.provenance.settings
    assert settings["scenario"] == "claw-12" and settings["scenario_id"] == card.id and settings["attempts"] == 2
    assert client.cost["calls"] == 2 and client.cost["tokens"] == 300


def test_budget_spent_reports_every_stage(handlers: dict) -> None:
    answers = ["I would build an expense app.", answer_text(code=planted(6)), answer_text(code=hidden(5))]
    card = select(load_catalogue(), "claw-12")[0]
    with serve(Writer(answers)) as server:
        result = synthesize(card, ChatClient(server.url, "m", retries=0), backend=BACKEND, handlers=handlers, revisions=2)
    assert result.env is None
    assert [a.stage for a in result.attempts] == ["answer", "rules", "probe"]
    assert result.attempts[0].diagnostics == ["the answer holds no JSON object"]
    assert "Table 15 rule 5" in result.attempts[2].diagnostics[0] and "held" in result.attempts[2].diagnostics[0]


def test_unreachable_endpoint_is_one_stage(handlers: dict) -> None:
    card = load_catalogue()[0]
    result = synthesize(card, ChatClient(f"http://127.0.0.1:{closed_port()}/v1", "m", retries=0), backend=BACKEND, handlers=handlers)
    assert result.env is None and result.stage == "endpoint" and "cannot be reached" in result.attempts[0].diagnostics[0]


def test_rubric_answers() -> None:
    assert parse_score(JUDGE_3_3_3).kept
    assert not parse_score('{"solvability": 3, "validation": 2, "consistency": 3}').kept
    assert parse_score('{"solvability": 3, "validation": 3, "consistency": 2}').kept
    odd = parse_score('sure: {"solvability": 5, "validation": 3, "consistency": 3}')
    assert odd.solvability is None and not odd.kept and "no score for solvability" in odd.reasons
    assert not parse_score("three, three, two").kept


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command("synth")(synth_cmd)
    app.command("noop")(lambda: None)
    return app


@pytest.fixture(scope="module")
def llm_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth-llm")
    with serve(Writer([answer_text(code=planted(2)), GOOD])) as server:
        result = CliRunner().invoke(_cli(), ["synth", "--llm", server.url, "--llm-model", "app-writer", "--select", "claw-12",
                                             "--n", "1", "--sandbox", BACKEND, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "rubric solvability (mean of 1)" in result.output
    return out


def test_cli_synthesizes_with_an_endpoint(llm_out: Path) -> None:
    report = json.loads((llm_out / "report.json").read_text())
    assert report["kept"] == 1 and report["by_kind"] == {"llm": 1}
    assert report["rubric"][0]["solvability"] == 3 and report["rubric"][0]["kept"]
    assert report["llm_cost"]["calls"] == 3  # two answers and one judgment
    (log,) = [json.loads(line) for line in (llm_out / "attempts.jsonl").read_text().splitlines()]
    assert log["scenario"] == "claw-12" and [a["stage"] for a in log["attempts"]] == ["rules", "accepted"]
    (manifest,) = [json.loads(line) for line in (llm_out / "manifest.jsonl").read_text().splitlines()]
    assert manifest["kind"] == "llm" and manifest["rubric"] == {"solvability": 3, "validation": 3, "consistency": 3}


def test_rubric_below_3_3_2_is_not_kept(tmp_path: Path) -> None:
    with serve(Writer([GOOD], judge='{"solvability": 3, "validation": 2, "consistency": 3, "reasons": "weak check"}')) as server:
        result = CliRunner().invoke(_cli(), ["synth", "--llm", server.url, "--select", "claw-12", "--n", "1", "--revisions", "0",
                                             "--sandbox", BACKEND, "--out", str(tmp_path)])
    assert result.exit_code == 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["admitted"] == 1 and report["kept"] == 0
    assert any(k.startswith("inspector: rubric") for k in report["rejections"])


@pytest.mark.parametrize("policy_name, expected", [("oracle", 1.0), ("noop", 0.0)])
def test_collect_scores_the_synthesized_app(llm_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            policy_name: str, expected: float) -> None:
    from envtrain.agent.baselines import NoopPolicy, OraclePolicy
    from envtrain.rollout.collect import CollectConfig, collect

    monkeypatch.setenv("ENVTRAIN_SANDBOX", BACKEND)
    policy = OraclePolicy() if policy_name == "oracle" else NoopPolicy()
    summary = asyncio.run(collect(CollectConfig(envs=llm_out / "envs", out=tmp_path / policy_name), policy))
    assert summary.environments == 1 and not summary.failed_environments
    assert summary.pass_at_1 == expected and summary.mean_score == expected
