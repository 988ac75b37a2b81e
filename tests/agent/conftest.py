"""One tiny Qwen3 model per test session, built locally (no Hub), shared by the tokenizer and policy tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envtrain.agent.tiny import build_tiny_model

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "pay_invoice",
            "description": "pay part of an invoice",
            "parameters": {
                "type": "object",
                "properties": {"invoice_id": {"type": "integer"}, "amount": {"type": "number"}},
                "required": ["invoice_id", "amount"],
            },
        },
    }
]

# A finished tool round in OpenAI format: the call's arguments are a JSON string, as the API carries them.
TOOL_ROUND = [
    {"role": "system", "content": "You are a careful clerk."},
    {"role": "user", "content": "Pay invoice 10 in full."},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "The invoice is approved; pay 100.",
        "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "pay_invoice", "arguments": '{"invoice_id": 10, "amount": 100.0}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "content": '{"paid": 100.0, "status": "approved"}'},
]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen3")


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="session")
def hf_policy(tiny_model_dir: Path) -> Any:
    from envtrain.agent.hf import HFPolicy

    return HFPolicy(tiny_model_dir)
