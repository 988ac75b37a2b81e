"""OpenAIPolicy against real local servers: the project's server over HFPolicy on the tiny model, and
scripted stdlib servers for what a healthy model server never does (429, 503, 400, silence)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from envtrain.agent.openai_http import OpenAIPolicy, PolicyHTTPError, normalize_base_url, retry_after_seconds
from envtrain.agent.server import RunningServer, serve
from envtrain.agent.types import EpisodeContext, Generation, SamplingParams, ToolCall
from tests.agent.conftest import TOOL_ROUND, TOOLS
from tests.agent.http_kit import ScriptedPolicy, StubServer, closed_port, ok_body

CTX = EpisodeContext(env=None)
USER = [{"role": "user", "content": "Pay invoice 10 in full."}]


@pytest.fixture(scope="module")
def hf_server(hf_policy: Any) -> Iterator[RunningServer]:
    with serve(hf_policy, model_name="tiny-qwen3") as server:
        yield server


def run(policy: OpenAIPolicy, messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: SamplingParams) -> list[Generation]:
    async def go() -> list[Generation]:
        try:
            return await policy.generate(messages, tools, params, CTX)
        finally:
            await policy.aclose()

    return asyncio.run(go())


# -- against the project's server over the tiny model ------------------------------------------


def test_full_request_with_tools_matches_the_policy_in_process(hf_server: RunningServer, hf_policy: Any) -> None:
    params = SamplingParams(temperature=0.0, max_tokens=10)
    policy = OpenAIPolicy([hf_server.url], extra_body={"return_token_ids": True})
    [gen] = run(policy, TOOL_ROUND, TOOLS, params)
    assert policy.model == "tiny-qwen3"  # read from GET /models
    [direct] = asyncio.run(hf_policy.generate(TOOL_ROUND, TOOLS, params, CTX))
    # greedy: the HTTP path returns exactly what the policy generates in-process
    assert gen.token_ids == direct.token_ids and gen.prompt_token_ids == direct.prompt_token_ids
    assert gen.logprobs == pytest.approx(direct.logprobs, abs=1e-5)
    assert (gen.prompt_tokens, gen.completion_tokens) == (direct.prompt_tokens, direct.completion_tokens)
    assert gen.finish_reason == direct.finish_reason
    assert gen.turn.content == direct.turn.content and gen.turn.tool_calls == direct.turn.tool_calls


def test_n_two_without_token_ids(hf_server: RunningServer) -> None:
    gens = run(OpenAIPolicy([hf_server.url], model="tiny-qwen3"), USER, TOOLS, SamplingParams(n=2, max_tokens=5, seed=1))
    assert len(gens) == 2
    for gen in gens:
        assert gen.token_ids is None and gen.prompt_token_ids is None  # standard OpenAI carries no ids
        assert gen.logprobs is not None and len(gen.logprobs) == gen.completion_tokens <= 5
        assert gen.finish_reason in ("stop", "length", "tool_calls") and gen.prompt_tokens > 0


def test_requests_spread_over_endpoints_by_load(hf_policy: Any) -> None:
    with serve(hf_policy) as a, serve(hf_policy) as b:
        policy = OpenAIPolicy([a.url, b.url], model="tiny", concurrency=8)

        async def go() -> None:
            await asyncio.gather(*[policy.generate(USER, [], SamplingParams(max_tokens=4), CTX) for _ in range(8)])
            await policy.aclose()

        asyncio.run(go())
        assert a.completions + b.completions == 8
        assert min(a.completions, b.completions) >= 3, (a.completions, b.completions)


def test_a_slow_endpoint_gets_fewer_requests() -> None:
    # Least-loaded, not round-robin: the slow server keeps its one request in flight while the fast one serves the rest.
    with serve(ScriptedPolicy(["slow"], delay=1.0)) as slow, serve(ScriptedPolicy(["fast"], delay=0.02)) as fast:
        policy = OpenAIPolicy([slow.url, fast.url], model="m", concurrency=2)

        async def go() -> None:
            await asyncio.gather(*[policy.generate(USER, [], SamplingParams(), CTX) for _ in range(12)])
            await policy.aclose()

        asyncio.run(go())
        assert slow.completions == 1 and fast.completions == 11


def test_the_concurrency_limit_holds(hf_policy: Any) -> None:
    with serve(ScriptedPolicy(["x"], delay=0.1)) as server:
        policy = OpenAIPolicy([server.url], model="m", concurrency=3)

        async def go() -> None:
            await asyncio.gather(*[policy.generate(USER, [], SamplingParams(), CTX) for _ in range(9)])
            await policy.aclose()

        asyncio.run(go())
        assert server.completions == 9 and server.max_inflight == 3


def test_calls_left_in_content_are_parsed_and_bad_ones_reported() -> None:
    good = '<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100.0}}\n</tool_call>'
    bad = '<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10,,}}\n</tool_call>'
    with serve(ScriptedPolicy([good + "\n" + bad])) as server:
        [gen] = run(OpenAIPolicy([server.url]), USER, TOOLS, SamplingParams())
    assert gen.turn.tool_calls == (ToolCall(id="call_0", name="pay_invoice", arguments={"invoice_id": 10, "amount": 100.0}),)
    assert len(gen.turn.errors) == 1 and "invalid JSON" in gen.turn.errors[0]


# -- the wire format, from a scripted server ----------------------------------------------------


def test_tool_calls_reasoning_usage_and_the_request_body() -> None:
    message = {
        "role": "assistant", "content": None, "reasoning": "check first",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "pay_invoice", "arguments": '{"invoice_id": 10, "amount": 5}'}},
            {"id": "b", "type": "function", "function": {"name": "pay_invoice", "arguments": '{"invoice_id": 10,'}},
            {"id": "c", "type": "function", "function": {"name": "pay_invoice", "arguments": "[1, 2]"}},
        ],
    }
    body = ok_body(message, n=2, usage={"prompt_tokens": 20, "completion_tokens": 7})
    with StubServer(lambda attempt, req: (200, {}, body)) as stub:
        gens = run(OpenAIPolicy([stub.url], api_key="k"), USER, TOOLS,
                   SamplingParams(n=2, temperature=0.3, top_p=0.9, max_tokens=33, seed=5, stop=("END",)))
        sent = stub.bodies[0]
    assert sent == {"model": "stub-model", "messages": USER, "tools": TOOLS, "tool_choice": "auto", "temperature": 0.3,
                    "top_p": 0.9, "max_tokens": 33, "n": 2, "seed": 5, "stop": ["END"], "logprobs": True}
    first = gens[0]
    assert first.turn.reasoning == "check first" and first.turn.content == ""
    assert first.turn.tool_calls == (
        ToolCall(id="a", name="pay_invoice", arguments={"invoice_id": 10, "amount": 5}),
        ToolCall(id="b", name="pay_invoice", arguments='{"invoice_id": 10,'),
        ToolCall(id="c", name="pay_invoice", arguments="[1, 2]"),
    )
    assert len(first.turn.errors) == 2
    assert "tool call 1 (pay_invoice): arguments are not valid JSON" in first.turn.errors[0]
    assert "tool call 2 (pay_invoice): arguments are not a JSON object" in first.turn.errors[1]
    assert first.finish_reason == "tool_calls"  # the server said "stop", but the turn holds calls
    assert [g.completion_tokens for g in gens] == [4, 3] and all(g.prompt_tokens == 20 for g in gens)


def test_fewer_choices_than_n_are_topped_up() -> None:
    with StubServer(lambda attempt, req: (200, {}, ok_body(n=1))) as stub:  # a server that ignores n
        gens = run(OpenAIPolicy([stub.url], model="m"), USER, [], SamplingParams(n=3, seed=10))
        assert len(gens) == 3 and stub.attempts == 3
        assert [b["n"] for b in stub.bodies] == [3, 2, 1] and [b["seed"] for b in stub.bodies] == [10, 11, 12]
        assert all("tools" not in b and "tool_choice" not in b for b in stub.bodies)


def test_a_server_refusing_logprobs_is_asked_again_without() -> None:
    def script(attempt: int, req: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        if req.get("logprobs"):
            return 400, {}, {"error": {"message": "logprobs are not supported for this model", "type": "invalid_request_error"}}
        return 200, {}, ok_body()

    with StubServer(script) as stub:
        policy = OpenAIPolicy([stub.url], model="m")

        async def go() -> list[Generation]:
            await policy.generate(USER, [], SamplingParams(), CTX)
            gens = await policy.generate(USER, [], SamplingParams(), CTX)
            await policy.aclose()
            return gens

        [gen] = asyncio.run(go())
        assert gen.logprobs is None and gen.turn.content == "hello"
        assert [("logprobs" in b) for b in stub.bodies] == [True, False, False]  # remembered after the first refusal


# -- retries, errors, bounds ---------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 503])
def test_retryable_status_then_success_honours_retry_after(status: int) -> None:
    def script(attempt: int, req: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        return (status, {"Retry-After": "0.3"}, {"error": {"message": "busy"}}) if attempt == 0 else (200, {}, ok_body())

    with StubServer(script) as stub:
        # backoff=5 would wait 2.5-5 s: a gap near 0.3 s shows Retry-After was used instead
        [gen] = run(OpenAIPolicy([stub.url], model="m", backoff=5.0), USER, [], SamplingParams())
        assert stub.attempts == 2 and gen.turn.content == "hello"
        gap = stub.arrivals[1] - stub.arrivals[0]
        assert 0.3 <= gap < 2.0


def test_503_without_retry_after_backs_off_and_succeeds() -> None:
    replies = [(503, {}, {"error": "down"}), (502, {}, b"<html>bad gateway</html>"), (200, {}, ok_body())]
    with StubServer(lambda attempt, req: replies[attempt]) as stub:
        [gen] = run(OpenAIPolicy([stub.url], model="m", backoff=0.05), USER, [], SamplingParams())
        assert stub.attempts == 3 and gen.turn.content == "hello"


def test_retries_run_out_with_one_clear_error() -> None:
    with StubServer(lambda attempt, req: (500, {}, {"error": {"message": "boom"}})) as stub:
        with pytest.raises(PolicyHTTPError, match=r"failed after 3 attempts; last error: .*HTTP 500"):
            run(OpenAIPolicy([stub.url], model="m", max_retries=2, backoff=0.01), USER, [], SamplingParams())
        assert stub.attempts == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_client_errors_are_not_retried(status: int) -> None:
    with StubServer(lambda attempt, req: (status, {}, {"error": {"message": "bad tools schema"}})) as stub:
        with pytest.raises(PolicyHTTPError) as info:
            run(OpenAIPolicy([stub.url], model="m", backoff=0.01), USER, [], SamplingParams())
        assert stub.attempts == 1
    assert info.value.status == status
    assert f"{stub.url}/chat/completions answered HTTP {status}: bad tools schema" in str(info.value)


def test_an_unreachable_endpoint_fails_fast_and_clearly() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    started = time.monotonic()
    with pytest.raises(PolicyHTTPError, match=r"failed after 3 attempts; last error: http://127\.0\.0\.1:\d+/v1/chat/completions: ConnectError"):
        run(OpenAIPolicy([url], model="m", max_retries=2, timeout=2, backoff=0.05), USER, [], SamplingParams())
    assert time.monotonic() - started < 3 * 2


def test_a_silent_endpoint_times_out_within_the_bound() -> None:
    def script(attempt: int, req: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        time.sleep(3)  # never answers in time
        return 200, {}, ok_body()

    with StubServer(script) as stub:
        started = time.monotonic()
        with pytest.raises(PolicyHTTPError, match="no answer within 0.3 s"):
            run(OpenAIPolicy([stub.url], model="m", max_retries=1, timeout=0.3, backoff=0.05), USER, [], SamplingParams())
        elapsed = time.monotonic() - started
        assert stub.attempts == 2
    assert elapsed < 2 * 0.3 + 0.5  # (max_retries + 1) * timeout, plus the backoff and slack


def test_a_dead_endpoint_is_routed_around() -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with StubServer(lambda attempt, req: (200, {}, ok_body())) as stub:
        policy = OpenAIPolicy([dead, stub.url], model="m", backoff=0.05)

        async def go() -> None:
            for _ in range(4):
                await policy.generate(USER, [], SamplingParams(), CTX)
            await policy.aclose()

        asyncio.run(go())
        assert stub.attempts == 4 and policy.sent[normalize_base_url(dead)] == 1  # tried once, then cooled off


def test_a_policy_survives_a_new_event_loop() -> None:
    with StubServer(lambda attempt, req: (200, {}, ok_body())) as stub:
        policy = OpenAIPolicy([stub.url])
        for _ in range(2):  # asyncio.run per batch, as scripts do
            [gen] = asyncio.run(policy.generate(USER, [], SamplingParams(), CTX))
            assert gen.turn.content == "hello"
        asyncio.run(policy.aclose())
        assert stub.attempts == 2 and policy.model == "stub-model"


def test_url_and_retry_after_helpers() -> None:
    assert normalize_base_url("http://h:8000") == "http://h:8000/v1"
    assert normalize_base_url("https://api.example.com/v1/") == "https://api.example.com/v1"
    assert normalize_base_url("http://h/openai/v1") == "http://h/openai/v1"
    with pytest.raises(ValueError, match="not an http"):
        normalize_base_url("h:8000")
    assert retry_after_seconds("2") == 2.0 and retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
    with pytest.raises(ValueError, match="at least one endpoint"):
        OpenAIPolicy([])


def test_error_body_json_is_what_servers_send() -> None:
    # the error text the client quotes comes from {"error": {"message": ...}} or a bare string
    with StubServer(lambda attempt, req: (403, {}, {"error": "forbidden here"})) as stub, \
            pytest.raises(PolicyHTTPError, match="HTTP 403: forbidden here"):
        run(OpenAIPolicy([stub.url], model="m"), USER, [], SamplingParams())
    assert json.loads(json.dumps(ok_body()))["choices"][0]["message"]["content"] == "hello"


def test_http_modules_import_light() -> None:
    import subprocess
    import sys

    code = ("import sys, envtrain.agent.openai_http, envtrain.agent.server, envtrain.agent.registry, envtrain.agent.vllm_policy; "
            "print([m for m in ('torch', 'transformers', 'httpx', 'vllm') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_throughput_benchmark_prints_its_table() -> None:
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "http_throughput.py"), "--quick"],
                         check=False, capture_output=True, text=True, timeout=300, cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("server"))  # libraries may log above the table
    rows = [line.split()[:2] for line in lines[start + 1:]]
    assert rows == [[server, str(c)] for server in ("tiny-hf", "transport") for c in (1, 8, 32)]
