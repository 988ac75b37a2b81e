"""The project's OpenAI-compatible server, spoken to with raw HTTP: over HFPolicy on the tiny model, and
over a scripted policy where a completion must hold tool calls (a random tiny model writes none)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from envtrain.agent.server import RunningServer, serve
from tests.agent.conftest import TOOL_ROUND, TOOLS
from tests.agent.http_kit import ScriptedPolicy

ROOT = Path(__file__).resolve().parents[2]
USER = [{"role": "system", "content": "You are a careful clerk."}, {"role": "user", "content": "Pay invoice 10 in full."}]


@pytest.fixture(scope="module")
def hf_server(hf_policy: Any) -> Iterator[RunningServer]:
    with serve(hf_policy, model_name="tiny-qwen3") as server:
        yield server


def post(server: RunningServer, body: Any) -> httpx.Response:
    return httpx.post(server.url + "/chat/completions", json=body, timeout=60)


def test_models_and_health(hf_server: RunningServer) -> None:
    models = httpx.get(hf_server.url + "/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["tiny-qwen3"]
    assert httpx.get(hf_server.url.removesuffix("/v1") + "/health").json() == {"status": "ok"}


def test_chat_completion_with_tools_is_well_formed(hf_server: RunningServer, hf_policy: Any) -> None:
    body = {"model": "tiny-qwen3", "messages": TOOL_ROUND, "tools": TOOLS, "tool_choice": "auto",
            "temperature": 0.8, "max_tokens": 12, "seed": 3, "logprobs": True, "return_token_ids": True}
    response = post(hf_server, body)
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["object"] == "chat.completion" and doc["id"].startswith("chatcmpl-") and doc["model"] == "tiny-qwen3"
    [choice] = doc["choices"]
    assert choice["index"] == 0
    assert choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str)
    assert choice["finish_reason"] in ("stop", "length", "tool_calls")
    completion = doc["usage"]["completion_tokens"]
    assert 1 <= completion <= 12
    assert doc["usage"]["total_tokens"] == doc["usage"]["prompt_tokens"] + completion
    # logprobs: one entry per completion token, each a real log-probability, token text from the tokenizer
    entries = choice["logprobs"]["content"]
    assert len(entries) == completion == len(choice["token_ids"])
    assert all(e["logprob"] <= 0.0 for e in entries)
    assert [e["token"] for e in entries] == [hf_policy.tokenizer.decode([t]) for t in choice["token_ids"]]
    # the prompt is the chat template's rendering of exactly these messages and tools
    expected = hf_policy.tokenizer(hf_policy.render(TOOL_ROUND, TOOLS), add_special_tokens=False).input_ids
    assert doc["prompt_token_ids"] == expected and doc["usage"]["prompt_tokens"] == len(expected)


def test_n_choices_and_no_extras_unless_asked(hf_server: RunningServer) -> None:
    doc = post(hf_server, {"messages": USER, "n": 2, "max_tokens": 6, "temperature": 1.0}).json()
    assert [c["index"] for c in doc["choices"]] == [0, 1]
    assert all(c["logprobs"] is None and "token_ids" not in c for c in doc["choices"])
    assert "prompt_token_ids" not in doc
    assert doc["model"] == "tiny-qwen3"


@pytest.mark.parametrize(("body", "fragment"), [
    (b"{not json", "not JSON"),
    ({"messages": []}, "'messages' must be a non-empty list"),
    ({"messages": [{"content": "no role"}]}, "messages[0]"),
    ({"messages": USER, "temperature": -1}, "invalid temperature"),
    ({"messages": USER, "n": 0}, "invalid n"),
    ({"messages": USER, "stream": True}, "streaming is not supported"),
    ({"messages": USER, "tools": [{"type": "function"}]}, "tools[0]"),
])
def test_bad_requests_get_400_with_an_openai_error(hf_server: RunningServer, body: Any, fragment: str) -> None:
    url = hf_server.url + "/chat/completions"
    response = httpx.post(url, content=body) if isinstance(body, bytes) else httpx.post(url, json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and fragment in error["message"]


def test_unknown_route_is_404(hf_server: RunningServer) -> None:
    assert httpx.post(hf_server.url + "/completions", json={}).status_code == 404
    assert httpx.get(hf_server.url + "/nothing").json()["error"]["type"] == "not_found_error"


def test_tool_calls_go_out_in_openai_format() -> None:
    text = '<think>\nfind it\n</think>\n\nPaying now.\n<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100.0}}\n</tool_call>'
    with serve(ScriptedPolicy([text])) as server:
        doc = post(server, {"messages": USER, "tools": TOOLS}).json()
    [choice] = doc["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Paying now."
    assert choice["message"]["reasoning_content"] == "find it"
    assert choice["message"]["tool_calls"] == [{"id": "call_0", "type": "function", "function": {
        "name": "pay_invoice", "arguments": '{"invoice_id": 10, "amount": 100.0}'}}]


def test_a_call_that_did_not_parse_goes_out_as_raw_content() -> None:
    text = '<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10,,}}\n</tool_call>'
    with serve(ScriptedPolicy([text])) as server:
        doc = post(server, {"messages": USER, "tools": TOOLS}).json()
    message = doc["choices"][0]["message"]
    assert message["content"] == text and message["tool_calls"] is None  # as vLLM does: the client may re-parse


def test_policy_failure_is_a_500(tiny_model_dir: Path) -> None:
    class Broken(ScriptedPolicy):
        async def generate(self, *args: Any) -> Any:
            raise RuntimeError("GPU on fire")

    with serve(Broken(["x"])) as server:
        response = post(server, {"messages": USER})
    assert response.status_code == 500
    assert response.json()["error"] == {"message": "RuntimeError: GPU on fire", "type": "server_error", "param": None, "code": None}


def test_cli_serves_a_model_dir(tiny_model_dir: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "envtrain.agent.server", str(tiny_model_dir), "--port", "0", "--name", "tiny"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "serving tiny at http://127.0.0.1:PORT/v1  (Ctrl-C stops)"
        assert line.startswith("serving tiny at http://127.0.0.1:"), line + proc.stderr.read() if proc.stderr else ""
        url = line.split()[3]
        assert httpx.get(url + "/models").json()["data"][0]["id"] == "tiny"
        doc = httpx.post(url + "/chat/completions", json={"messages": USER, "max_tokens": 4}, timeout=60).json()
        assert doc["choices"][0]["message"]["role"] == "assistant"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0


def test_cli_refuses_a_missing_folder(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "envtrain.agent.server", str(tmp_path / "nope")],
                         check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "no such model folder" in out.stderr


def test_json_round_trip_keeps_unicode(hf_server: RunningServer) -> None:
    messages = [{"role": "user", "content": "Grüße aus München — 東京 ✓"}]
    response = httpx.post(hf_server.url + "/chat/completions", content=json.dumps({"messages": messages, "max_tokens": 3}).encode())
    assert response.status_code == 200
