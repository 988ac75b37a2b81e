"""The LLM builder over real HTTP (the project's own OpenAI-compatible server answering with scripted
texts, since a random tiny model never writes a usable request): a bad answer is rejected with its
reason and goes back to the model; the revised one is guarded and admitted like any other build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from envtrain.agent.parsers import parse_completion
from envtrain.agent.server import serve
from envtrain.agent.types import Generation
from envtrain.core.admission import check_admission
from envtrain.core.env import Environment
from envtrain.compose.builder import build
from envtrain.compose.llm_builder import anchors, check_request, parse_answer
from envtrain.compose.pipeline import ComposeConfig, run
from tests.compose.conftest import TEST_DATASETS
from tests.compose.test_evolve import SK

DRAFT = re.compile(r"Draft request \(correct but plain\):\n(.*?)(?:\nYour previous answers|$)", re.DOTALL)


class RequestWriterModel:
    """A policy that answers with scripted texts in turn; ``{draft}`` becomes the draft of the prompt."""

    name = "request-writer"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.prompts: list[str] = []

    async def generate(self, messages, tools, params, ctx):
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        text = self.texts[min(len(self.prompts), len(self.texts)) - 1]
        if "{draft}" in text:
            draft = DRAFT.search(prompt).group(1).strip()
            text = json.dumps({"request": "Hi! When you have a moment: " + draft})
        return [Generation(turn=parse_completion(text, "hermes"), text=text, finish_reason="stop",
                           prompt_tokens=50, completion_tokens=20)]

    async def aclose(self) -> None:
        return None


def compose(tmp_path: Path, card_cache: str, url: str, n: int = 1, **kw) -> tuple[dict, list[dict]]:
    config = ComposeConfig(n=n, seed=0, out=tmp_path / "run", datasets=TEST_DATASETS, workers=1, cache_dir=Path(card_cache),
                           builder="llm", llm=url, llm_model="request-writer", **kw)
    report = run(config)
    return report, [json.loads(line) for line in (config.out / "manifest.jsonl").read_text().splitlines()]


def test_a_rejected_answer_goes_back_and_the_revision_is_admitted(tmp_path: Path, card_cache: str) -> None:
    writer = RequestWriterModel(["Sure, I can write that request.", '{"request": "Please go through the records and apply the policy."}',
                                 "{draft}"])
    server = serve(writer)
    try:
        report, entries = compose(tmp_path, card_cache, server.url)
    finally:
        server.close()
    (entry,) = entries
    assert entry["status"] == "admitted", entry.get("reason")
    llm = entry["llm"]
    assert (llm["model"], llm["answers"]) == ("request-writer", 3)
    assert llm["rejected"][0].startswith("the answer is not a JSON object")
    assert llm["rejected"][1].startswith("it does not name")
    # each retry's prompt carries the reasons of the answers before it; the rule itself is never shown
    assert "not a JSON object" in writer.prompts[1] and "it does not name" in writer.prompts[2]
    env = Environment.load(tmp_path / "run" / "envs" / f"{entry['id']}.json")
    assert env.request.startswith("Hi! When you have a moment: ") and env.request == llm["request"]
    assert env.provenance.settings["builder"] == {"kind": "llm", "model": "request-writer"}
    assert check_admission(env).admitted

    # resume stays exact: the accepted request is in the manifest, so no endpoint is needed to rebuild it
    (tmp_path / "run" / "envs" / f"{entry['id']}.json").unlink()
    _, again = compose(tmp_path, card_cache, "http://127.0.0.1:9/v1")
    assert again[0]["id"] == entry["id"] and again[0]["llm"]["replayed"] is True


def test_a_budget_of_bad_answers_is_one_counted_rejection(tmp_path: Path, card_cache: str) -> None:
    server = serve(RequestWriterModel(['{"request": "Please handle it.", "note": "x"}']))
    try:
        report, entries = compose(tmp_path, card_cache, server.url, n=2, llm_budget=2)
    finally:
        server.close()
    assert [e["status"] for e in entries] == ["rejected", "rejected"]
    assert entries[0]["stage"] == "llm builder"
    assert entries[0]["reason"].startswith("llm builder: no acceptable request in 2 answers (last: the object must have exactly one")
    assert report["rejections"]["by_stage"] == {"llm builder": 2}


def test_an_unreachable_endpoint_is_a_reason_not_a_crash(tmp_path: Path, card_cache: str) -> None:
    _, entries = compose(tmp_path, card_cache, "http://127.0.0.1:9/v1")
    assert entries[0]["status"] == "rejected" and "cannot be reached" in entries[0]["reason"]


def test_requests_that_restate_the_rule_or_lose_the_way_are_refused(pool, data) -> None:
    built = build(SK, pool, data, seed=4)
    parts, draft = built.parts, built.env.request
    assert check_request(draft, parts, draft) == []  # the programmatic request is acceptable as it is
    threshold = str(built.env.provenance.settings["rule"]["threshold"])
    leaked = draft + f" Anything above {threshold} goes to the {parts['route_values'][0]} team."
    problems = check_request(leaked, parts, draft)
    assert any(f"it states {threshold!r}" in p for p in problems) and any("the outcome" in p for p in problems)
    copied = draft + " " + parts["rule"]
    assert any("repeats the policy's words" in p for p in check_request(copied, parts, draft))
    lost = draft.replace(anchors(parts)[0], "the policy")
    assert check_request(lost, parts, draft)[0].startswith(f"it does not name {anchors(parts)[0]!r}")
    assert parse_answer('```json\n{"request": "Please work through the open tickets as the note says."}\n```').startswith("Please")
    with pytest.raises(ValueError, match="characters"):
        parse_answer('{"request": "Do it."}')


def test_every_programmatic_draft_passes_the_request_check(tmp_path: Path, card_cache: str) -> None:
    """The checks hold the model to what the programmatic builder already does, no more."""
    from envtrain.compose.context import Unbuildable
    from envtrain.compose.pipeline import Composer

    composer = Composer(ComposeConfig(n=1, out=tmp_path, datasets=TEST_DATASETS, cache_dir=Path(card_cache)))
    checked = 0
    for index in range(48):
        sk, seed = composer.plan(index)
        try:
            built = build(sk, composer.pool, composer.data, seed)
        except Unbuildable:
            continue
        assert check_request(built.env.request, built.parts, built.env.request) == [], (sk.domain, built.env.request)
        checked += 1
    assert checked >= 40
