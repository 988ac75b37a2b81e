"""Policies by name, as the CLI and configs write them: ``make_policy("openai:http://gpu0:8000/v1")``.

Each backend is imported only when its spec is asked for, so naming one never loads the others
(``vllm:`` needs vLLM, ``hf:`` needs torch, ``openai:`` needs httpx).
"""

from __future__ import annotations

from typing import Any

from envtrain.agent.types import Policy

SPEC_FORMS = "oracle, noop, random[:SEED], hf:PATH, openai:URL[,URL...], vllm:MODEL"


def make_policy(spec: str, **kwargs: Any) -> Policy:
    """Build the policy ``spec`` names; ``kwargs`` go to its constructor (e.g. ``concurrency=64``)."""
    kind, sep, arg = spec.strip().partition(":")
    arg = arg.strip()
    if kind in ("oracle", "noop") and not sep:
        from envtrain.agent.baselines import NoopPolicy, OraclePolicy

        return OraclePolicy(**kwargs) if kind == "oracle" else NoopPolicy(**kwargs)
    if kind == "random" and (not sep or arg.isdigit()):
        from envtrain.agent.baselines import RandomPolicy

        return RandomPolicy(seed=int(arg) if arg else 0, **kwargs)
    if kind == "hf" and arg:
        from envtrain.agent.hf import HFPolicy

        return HFPolicy(arg, **kwargs)
    urls = [u.strip() for u in arg.split(",") if u.strip()]
    if kind == "openai" and urls:
        from envtrain.agent.openai_http import OpenAIPolicy

        return OpenAIPolicy(urls, **kwargs)
    if kind == "vllm" and arg:
        from envtrain.agent.vllm_policy import VLLMPolicy

        return VLLMPolicy(arg, **kwargs)
    raise ValueError(f"unknown policy {spec!r}: use one of {SPEC_FORMS}")
