"""A tiny Qwen3-architecture model and tokenizer, built locally in seconds, for tests and CPU smoke runs.

    path = build_tiny_model(".cache/tiny-qwen3")       # idempotent: a stamp file records the settings
    AutoModelForCausalLM.from_pretrained(path); AutoTokenizer.from_pretrained(path)   # offline

The tokenizer is byte-level BPE trained on a small built-in corpus, so any text encodes. It carries
Qwen3's chat and tool tokens and the Qwen3 chat template that TRL ships (``trl/chat_templates/qwen3.jinja``),
byte for byte, so TRL recognises it as Qwen3 (response schema, training-template patches) and the
"hermes" tool-call parser applies. Nothing here touches the Hugging Face Hub.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any, Sequence

STAMP = "envtrain_tiny.json"
DEFAULT_VOCAB = 1024
BUILD_VERSION = 1  # bump when the corpus, tokens or config recipe change, so stamped builds are redone

# Qwen3's control tokens: special ones are dropped by ``skip_special_tokens``; the tool and think
# markers are plain added tokens there, so decoded completions keep them for the parser.
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
MARKUP_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"  # as in Qwen3: pad is <|endoftext|>, distinct from the turn-ending eos

_CORPUS = (
    "You are a helpful assistant. Use the tools to answer the user's request.",
    "Please pay invoice 10 in full and tell me when it is done.",
    "List the open tickets assigned to me, then escalate the oldest one.",
    "Schedule a meeting with Dana on Tuesday at 10:00 in room B.",
    "The invoice was paid. The ticket is escalated. The meeting is booked.",
    "I could not find that record; please check the id and try again.",
    "Let me think about which tool to call first, then check the result.",
    '{"name": "list_invoices", "arguments": {"status": "approved", "limit": 10}}',
    '{"name": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100.0}}',
    '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}',
    '{"type": "function", "function": {"name": "search", "description": "search records", '
    '"parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}',
    '{"ok": true, "output": [{"id": 1, "name": "Acme Supply", "tier": "gold", "blocked": false}]}',
    '{"error": {"kind": "not_found", "message": "No invoice 99."}}',
    "# Tools\n\nYou may call one or more functions to assist with the user query.",
    "0 1 2 3 4 5 6 7 8 9 10 42 100 2026-01-10T12:00:00Z true false null",
    "def main():\n    return [x * 2 for x in range(10)]\n",
    "Grüße aus München — café, naïve, 東京, Москва, ✓ done.",
)


def _chat_template() -> str:
    """TRL's copy of the original Qwen3 template, read from the installed package without importing it."""
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("building the tiny model needs the `trl` package (for its Qwen3 chat template)")
    path = Path(next(iter(spec.submodule_search_locations))) / "chat_templates" / "qwen3.jinja"
    return path.read_text(encoding="utf-8")


def _settings(layers: int, hidden: int, seed: int, vocab_size: int, corpus: Sequence[str]) -> dict[str, Any]:
    settings: dict[str, Any] = {"version": BUILD_VERSION, "layers": layers, "hidden": hidden, "seed": seed}
    if vocab_size != DEFAULT_VOCAB or corpus:  # the default build keeps its original stamp
        digest = hashlib.sha256("\x00".join(corpus).encode("utf-8")).hexdigest()[:16]
        settings.update(vocab_size=vocab_size, corpus=digest)
    return settings


def _train_tokenizer(vocab_size: int, corpus: Sequence[str] = ()) -> Any:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodes: no unknown token needed
        show_progress=False,
    )
    tok.train_from_iterator(list(_CORPUS) * 4 + list(corpus), trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    return tok


def build_tiny_tokenizer(vocab_size: int = DEFAULT_VOCAB, corpus: Sequence[str] = ()) -> Any:
    """A ``PreTrainedTokenizerFast`` with Qwen3's special tokens and chat template. ``corpus`` adds domain
    text to the BPE training (the demo passes its train split's prompts and trajectories, so tool
    schemas encode in a few thousand tokens rather than byte by byte)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(vocab_size, corpus),
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        chat_template=_chat_template(),
        model_max_length=32768,
    )


def build_tiny_model(out_dir: str | Path, *, layers: int = 2, hidden: int = 64, seed: int = 0,
                     vocab_size: int = DEFAULT_VOCAB, corpus: Sequence[str] = ()) -> Path:
    """Save a random tiny Qwen3 causal LM and its tokenizer to ``out_dir``; skip when already built alike."""
    out = Path(out_dir)
    corpus = tuple(corpus)
    settings = _settings(layers, hidden, seed, vocab_size, corpus)
    stamp = out / STAMP
    if stamp.is_file():
        try:
            if json.loads(stamp.read_text(encoding="utf-8")) == settings:
                return out
        except (OSError, json.JSONDecodeError):
            pass  # a damaged stamp: rebuild
    if hidden % 16:
        raise ValueError(f"hidden must be a multiple of 16 (head_dim 16), got {hidden}")

    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen3Config

    tokenizer = build_tiny_tokenizer(vocab_size, corpus)
    eos_id = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    pad_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    heads = hidden // 16
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),  # grouped-query attention, as the real model uses
        head_dim=16,
        max_position_embeddings=32768,  # RoPE costs nothing per position; tool prompts run long
        tie_word_embeddings=True,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):  # a fixed init without disturbing the caller's RNG
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    # Stop on the turn end and on <|endoftext|>, as Qwen3's own generation config does.
    model.generation_config = GenerationConfig(eos_token_id=[eos_id, pad_id], pad_token_id=pad_id, do_sample=True)

    out.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    stamp.write_text(json.dumps(settings, sort_keys=True), encoding="utf-8")  # last: a partial build has no stamp
    return out


__all__ = ["EOS_TOKEN", "MARKUP_TOKENS", "PAD_TOKEN", "SPECIAL_TOKENS", "build_tiny_model", "build_tiny_tokenizer"]
