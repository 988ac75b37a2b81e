"""Policies by name: every form builds its backend, anything else is one clear ValueError."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from envtrain.agent.registry import SPEC_FORMS, make_policy
from envtrain.agent.types import Policy


def test_baselines_by_name() -> None:
    from envtrain.agent.baselines import NoopPolicy, OraclePolicy, RandomPolicy

    assert isinstance(make_policy("oracle"), OraclePolicy)
    assert isinstance(make_policy(" noop "), NoopPolicy)
    assert make_policy("random").seed == 0 and make_policy("random:7").seed == 7
    assert isinstance(make_policy("random:3", calls=2), RandomPolicy)


def test_openai_spec_takes_several_urls_and_kwargs() -> None:
    from envtrain.agent.openai_http import OpenAIPolicy

    policy = make_policy("openai:http://127.0.0.1:8000/v1, http://127.0.0.1:8001", concurrency=3, model="m")
    assert isinstance(policy, OpenAIPolicy) and isinstance(policy, Policy)
    assert policy.urls == ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"]
    assert policy.concurrency == 3 and policy.model == "m"
    assert policy.name == "openai:http://127.0.0.1:8000/v1,http://127.0.0.1:8001/v1"


def test_hf_spec_loads_the_local_model(tiny_model_dir: Path) -> None:
    from envtrain.agent.hf import HFPolicy

    policy = make_policy(f"hf:{tiny_model_dir}")
    assert isinstance(policy, HFPolicy) and policy.name == f"hf:{tiny_model_dir}" and policy.family == "hermes"


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_vllm_spec_without_vllm_says_how_to_get_it() -> None:
    with pytest.raises(RuntimeError, match=r"^vLLM is not installed: pip install envtrain\[gpu\] on a CUDA machine$"):
        make_policy("vllm:Qwen/Qwen3-0.6B")


@pytest.mark.parametrize("spec", ["", "gpt4", "hf:", "openai:", "openai: , ", "vllm:", "oracle:x", "random:abc", "HF:/m"])
def test_unknown_specs_name_the_forms(spec: str) -> None:
    with pytest.raises(ValueError) as info:
        make_policy(spec)
    assert str(info.value) == f"unknown policy {spec!r}: use one of {SPEC_FORMS}"
