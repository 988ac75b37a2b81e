"""VLLMPolicy: a clear error without vLLM, the RequestOutput mapping on hand-built outputs shaped as vLLM
documents them (``CompletionOutput.token_ids``, ``.logprobs`` as ``list[dict[token_id, Logprob]]``), and
a real run on the tiny model where vLLM and a GPU are present (marker ``gpu``)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from envtrain.agent.types import EpisodeContext, SamplingParams
from envtrain.agent.vllm_policy import MISSING_VLLM, VLLMPolicy, _Pending
from tests.agent.conftest import TOOL_ROUND, TOOLS

CTX = EpisodeContext(env=None)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_missing_vllm_is_one_clear_line() -> None:
    with pytest.raises(RuntimeError) as info:
        VLLMPolicy("Qwen/Qwen3-0.6B")
    assert str(info.value) == MISSING_VLLM


def _policy_without_engine(tokenizer: Any) -> VLLMPolicy:
    """The output mapping needs only the tokenizer and family, not an engine."""
    policy = VLLMPolicy.__new__(VLLMPolicy)
    policy.tokenizer, policy.family, policy.max_model_len = tokenizer, "hermes", None
    return policy


def _completion(tokenizer: Any, text: str, *, eos: bool, finish: str, stop_reason: Any = None) -> Any:
    ids = tokenizer(text, add_special_tokens=False).input_ids + ([tokenizer.eos_token_id] if eos else [])
    logprobs = [{tid: SimpleNamespace(logprob=-0.5 - i, rank=1, decoded_token=None), 99999: SimpleNamespace(logprob=-9.0)}
                for i, tid in enumerate(ids)]
    return SimpleNamespace(index=0, text=text, token_ids=tuple(ids), logprobs=logprobs, finish_reason=finish, stop_reason=stop_reason)


def test_completion_output_mapping(tiny_tokenizer: Any) -> None:
    policy = _policy_without_engine(tiny_tokenizer)
    pending = _Pending([1, 2, 3], SamplingParams(), asyncio.Future(loop=asyncio.new_event_loop()))
    text = 'Paying.\n<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100.0}}\n</tool_call>'
    gen = policy._generation(pending, _completion(tiny_tokenizer, text, eos=True, finish="stop"), 0.5)
    assert gen.text == text  # the end token is in token_ids (trained on) but not in the text
    assert gen.token_ids[-1] == tiny_tokenizer.eos_token_id and len(gen.token_ids) == gen.completion_tokens
    assert gen.logprobs == [-0.5 - i for i in range(len(gen.token_ids))]  # the sampled token's, not the others'
    assert gen.finish_reason == "tool_calls" and gen.turn.tool_calls[0].arguments == {"invoice_id": 10, "amount": 100.0}
    assert gen.prompt_token_ids == [1, 2, 3] and gen.prompt_tokens == 3

    cut = policy._generation(pending, _completion(tiny_tokenizer, "The invoice was", eos=False, finish="length"), 0.5)
    assert cut.finish_reason == "length" and cut.text == "The invoice was" and cut.logprobs is not None

    stopped = policy._generation(pending, _completion(tiny_tokenizer, "Done", eos=False, finish="stop", stop_reason="END"), 0.5)
    assert stopped.text == "Done" and stopped.finish_reason == "stop"


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
def test_vllm_on_the_tiny_model(request: pytest.FixtureRequest) -> None:
    pytest.importorskip("vllm")
    if not _cuda():
        pytest.skip("needs a CUDA GPU")
    tiny_model_dir: Path = request.getfixturevalue("tiny_model_dir")  # built only once the skips have passed
    hf_policy: Any = request.getfixturevalue("hf_policy")
    policy = VLLMPolicy(str(tiny_model_dir), gpu_memory_utilization=0.2, max_model_len=2048, enforce_eager=True)

    async def go() -> list[Any]:
        try:
            return await asyncio.gather(*[policy.generate(TOOL_ROUND, TOOLS, SamplingParams(n=2, max_tokens=16, seed=i), CTX)
                                          for i in range(4)])
        finally:
            await policy.aclose()

    batches = asyncio.run(go())
    expected_prompt = hf_policy.tokenizer(hf_policy.render(TOOL_ROUND, TOOLS), add_special_tokens=False).input_ids
    assert [len(b) for b in batches] == [2, 2, 2, 2]
    for gen in (g for b in batches for g in b):
        assert gen.prompt_token_ids == expected_prompt  # rendered exactly as HFPolicy renders
        assert gen.token_ids and len(gen.token_ids) == len(gen.logprobs) == gen.completion_tokens <= 16
        assert all(lp <= 0.0 for lp in gen.logprobs)
        assert gen.finish_reason in ("stop", "length", "tool_calls")
