"""The tiny Qwen3 builder: offline, idempotent, and its tokenizer renders tools and tool rounds as Qwen3 does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from envtrain.agent.parsers import detect_family
from envtrain.agent.tiny import STAMP, build_tiny_model
from tests.agent.conftest import TOOL_ROUND, TOOLS

OFFLINE_LOAD = """
import sys, time
start = time.perf_counter()
from envtrain.agent.tiny import build_tiny_model
path = build_tiny_model(sys.argv[1], layers=3, hidden=32, seed=7)
from transformers import AutoModelForCausalLM, AutoTokenizer
model = AutoModelForCausalLM.from_pretrained(path)
tok = AutoTokenizer.from_pretrained(path)
assert model.config.model_type == "qwen3" and model.config.num_hidden_layers == 3 and model.config.hidden_size == 32
assert model.config.vocab_size == len(tok)
print(round(time.perf_counter() - start, 1))
"""


def test_builds_and_loads_offline(tmp_path: Path) -> None:
    # A fresh interpreter with the Hub switched off: nothing may be fetched.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home")}
    out = subprocess.run([sys.executable, "-c", OFFLINE_LOAD, str(tmp_path / "m")], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert not (tmp_path / "hf_home" / "hub").exists()  # no Hub cache was created


def test_build_is_idempotent_and_stamped(tiny_model_dir: Path) -> None:
    stamp = json.loads((tiny_model_dir / STAMP).read_text(encoding="utf-8"))
    assert stamp == {"version": 1, "layers": 2, "hidden": 64, "seed": 0}
    weights = tiny_model_dir / "model.safetensors"
    mtime = weights.stat().st_mtime_ns
    assert build_tiny_model(tiny_model_dir) == tiny_model_dir
    assert weights.stat().st_mtime_ns == mtime  # skipped: same settings


def test_same_seed_same_weights(tmp_path: Path, tiny_model_dir: Path) -> None:
    again = build_tiny_model(tmp_path / "again")
    assert (again / "model.safetensors").read_bytes() == (tiny_model_dir / "model.safetensors").read_bytes()
    assert (again / "tokenizer.json").read_bytes() == (tiny_model_dir / "tokenizer.json").read_bytes()


def test_ships_trls_qwen3_template(tiny_tokenizer: Any) -> None:
    from trl.chat_template_utils import add_response_schema, qwen3_chat_template

    assert tiny_tokenizer.chat_template == qwen3_chat_template
    assert detect_family(tiny_tokenizer) == "hermes"
    # TRL recognises the template by identity and can parse responses with it.
    add_response_schema(tiny_tokenizer)
    parsed = tiny_tokenizer.parse_response('<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10}}\n</tool_call><|im_end|>', prefix="")
    assert parsed["tool_calls"][0]["function"] == {"name": "pay_invoice", "arguments": {"invoice_id": 10}}


def test_special_tokens(tiny_tokenizer: Any) -> None:
    tok = tiny_tokenizer
    assert (tok.eos_token, tok.pad_token, tok.bos_token) == ("<|im_end|>", "<|endoftext|>", None)
    for marker in ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "</tool_call>", "<think>", "</think>"):
        assert tok.convert_ids_to_tokens(tok(marker, add_special_tokens=False).input_ids) == [marker]
    # Markup survives skip_special_tokens (as in Qwen3); the turn end does not.
    ids = tok("<think>a</think><tool_call>{}</tool_call><|im_end|>", add_special_tokens=False).input_ids
    assert tok.decode(ids, skip_special_tokens=True) == "<think>a</think><tool_call>{}</tool_call>"
    text = "Grüße 東京 🚀 \x00\x7f"
    assert tok.decode(tok(text, add_special_tokens=False).input_ids) == text  # byte-level: anything encodes


def test_chat_template_renders_tools_and_a_tool_round(tiny_tokenizer: Any) -> None:
    from envtrain.agent.hf import prepare_messages

    text = tiny_tokenizer.apply_chat_template(prepare_messages(TOOL_ROUND, "hermes"), tools=TOOLS, add_generation_prompt=True, tokenize=False)
    assert text.startswith("<|im_start|>system\nYou are a careful clerk.\n\n# Tools\n")
    assert "<tools>\n" + json.dumps(TOOLS[0]) + "\n</tools>" in text
    assert text.endswith(
        "<|im_start|>user\nPay invoice 10 in full.<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nThe invoice is approved; pay 100.\n</think>\n\n"
        '<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100.0}}\n</tool_call><|im_end|>\n'
        '<|im_start|>user\n<tool_response>\n{"paid": 100.0, "status": "approved"}\n</tool_response><|im_end|>\n'
        "<|im_start|>assistant\n"
    )
    # The raw OpenAI form (arguments as a JSON string) renders the same call.
    raw = tiny_tokenizer.apply_chat_template(TOOL_ROUND, tools=TOOLS, add_generation_prompt=True, tokenize=False)
    assert raw == text
    ids = tiny_tokenizer(text, add_special_tokens=False).input_ids
    assert tiny_tokenizer.decode(ids) == text
