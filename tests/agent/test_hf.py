"""HFPolicy on the tiny random model: token ids, logprobs that match a forward pass, limits, never raising."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envtrain.agent.hf import HFPolicy
from envtrain.agent.types import EpisodeContext, Generation, Policy, SamplingParams
from tests.agent.conftest import TOOL_ROUND, TOOLS

CTX = EpisodeContext(env=None)
ASK = [{"role": "user", "content": "Pay invoice 10 in full."}]


def generate(policy: HFPolicy, params: SamplingParams, messages: list[dict[str, Any]] = ASK) -> list[Generation]:
    return asyncio.run(policy.generate(messages, TOOLS, params, CTX))


def test_is_a_policy(hf_policy: HFPolicy) -> None:
    assert isinstance(hf_policy, Policy)
    assert hf_policy.name.startswith("hf:") and hf_policy.family == "hermes"


def test_n_completions_with_ids_and_logprobs(hf_policy: HFPolicy) -> None:
    gens = generate(hf_policy, SamplingParams(n=2, max_tokens=8, seed=0))
    prompt_ids = hf_policy.tokenizer(hf_policy.render(ASK, TOOLS), add_special_tokens=False).input_ids
    assert len(gens) == 2
    for g in gens:
        assert g.prompt_token_ids == prompt_ids and g.prompt_tokens == len(prompt_ids)
        assert g.token_ids is not None and g.logprobs is not None
        assert 1 <= len(g.token_ids) == len(g.logprobs) == g.completion_tokens <= 8
        assert all(math.isfinite(lp) and lp <= 0.0 for lp in g.logprobs)
        assert g.finish_reason in ("length", "stop", "tool_calls")
        assert g.finish_reason != "length" or len(g.token_ids) == 8
        assert g.seconds > 0
    assert gens[0].token_ids != gens[1].token_ids  # sampled independently (a 675-token vocabulary at T=0.7)


def test_logprobs_match_a_forward_pass(hf_policy: HFPolicy) -> None:
    import torch

    (g,) = generate(hf_policy, SamplingParams(n=1, max_tokens=6, temperature=1.0, seed=3))
    assert g.prompt_token_ids is not None and g.token_ids is not None and g.logprobs is not None
    ids = torch.tensor([g.prompt_token_ids + g.token_ids])
    with torch.no_grad():
        logits = hf_policy.model(ids).logits[0, len(g.prompt_token_ids) - 1 : -1]  # (T, V): each predicts the next token
    expected = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(g.token_ids)[:, None])[:, 0]
    assert torch.allclose(torch.tensor(g.logprobs), expected, atol=1e-4)


def test_seed_reproduces_and_greedy_agrees(hf_policy: HFPolicy) -> None:
    a = generate(hf_policy, SamplingParams(n=2, max_tokens=6, seed=11))
    b = generate(hf_policy, SamplingParams(n=2, max_tokens=6, seed=11))
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    greedy = generate(hf_policy, SamplingParams(n=2, max_tokens=6, temperature=0.0))
    assert greedy[0].token_ids == greedy[1].token_ids


def test_max_tokens_and_stop_strings(hf_policy: HFPolicy) -> None:
    for g in generate(hf_policy, SamplingParams(n=3, max_tokens=2, seed=1)):
        assert g.token_ids is not None and len(g.token_ids) <= 2
    stop = ("e", "a", " ")  # common in the training corpus, so a random model emits them early
    for g in generate(hf_policy, SamplingParams(n=3, max_tokens=40, seed=2, stop=stop)):
        assert not any(s in g.text for s in stop)  # the text ends before the stop string
        if g.finish_reason == "stop":
            assert g.token_ids is not None
            assert any(s in hf_policy.tokenizer.decode(g.token_ids) for s in stop) or g.token_ids[-1] in hf_policy.eos_ids


def test_tool_round_and_concurrent_requests(hf_policy: HFPolicy) -> None:
    async def both() -> list[list[Generation]]:
        params = SamplingParams(n=2, max_tokens=5, seed=4)
        return await asyncio.gather(hf_policy.generate(TOOL_ROUND, TOOLS, params, CTX), hf_policy.generate(ASK, [], params, CTX))

    after_tools, plain = asyncio.run(both())
    assert "<tool_response>" in hf_policy.tokenizer.decode(after_tools[0].prompt_token_ids)
    assert "<tools>" not in hf_policy.tokenizer.decode(plain[0].prompt_token_ids)
    for g in after_tools + plain:
        assert g.turn.content == g.text.strip() or g.turn.tool_calls or g.turn.errors or g.turn.reasoning


def test_a_template_refusal_is_an_error_generation_and_close_refuses(tiny_model_dir: Path) -> None:
    policy = HFPolicy(tiny_model_dir, name="tiny")
    policy.tokenizer.chat_template = "{{ raise_exception('This model only supports single tool-calls at once!') }}"
    gens = generate(policy, SamplingParams(n=2, max_tokens=2))
    assert [g.finish_reason for g in gens] == ["error", "error"]
    assert gens[0].turn.errors == ("the chat template could not render the conversation: This model only supports single tool-calls at once!",)
    asyncio.run(policy.aclose())
    with pytest.raises(RuntimeError, match="tiny is closed"):
        generate(policy, SamplingParams(max_tokens=2))


def test_import_does_not_load_torch() -> None:
    code = "import sys, envtrain.agent.hf, envtrain.agent.parsers, envtrain.agent.tiny; print([m for m in ('torch', 'transformers', 'trl') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
