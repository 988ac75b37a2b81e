"""Assistant-only loss with per-turn masks, checked token by token on a hand-built conversation with tool calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from envtrain.train.encode import IGNORE, EncodeError, clean_messages, encode_conversation, training_template

TOOLS = [{"type": "function", "function": {
    "name": "pay_invoice", "description": "pay part of an invoice",
    "parameters": {"type": "object", "properties": {"invoice_id": {"type": "integer"}, "amount": {"type": "number"}},
                   "required": ["invoice_id", "amount"]}}}]

# system, user, then three assistant turns: a call answered by a 4xx error (masked), a call that works, a reply.
MESSAGES = [
    {"role": "system", "content": "You are a careful clerk."},
    {"role": "user", "content": "Pay invoice 10 in full."},
    {"role": "assistant", "content": "", "reasoning_content": "Pay 99 first.", "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "pay_invoice", "arguments": '{"invoice_id": 99, "amount": 1}'}}]},
    {"role": "tool", "tool_call_id": "call_0", "name": "pay_invoice", "content": '{"error": {"kind": "not_found", "message": "No invoice 99."}}'},
    {"role": "assistant", "content": "", "reasoning_content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "pay_invoice", "arguments": '{"invoice_id": 10, "amount": 100.0}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "pay_invoice", "content": '{"paid": 100.0}'},
    {"role": "assistant", "content": "Invoice 10 is paid.", "tool_calls": None},
]

# What the model writes in each assistant turn, up to and including its end token (Qwen3 training template).
TURNS = [
    '<think>\nPay 99 first.\n</think>\n\n<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 99, "amount": 1}}\n</tool_call><|im_end|>',
    '<think>\n\n</think>\n\n<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100.0}}\n</tool_call><|im_end|>',
    "<think>\n\n</think>\n\nInvoice 10 is paid.<|im_end|>",
]


@pytest.fixture(scope="module")
def tokenizer(tiny: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny)


def _expected(tokenizer, keep: list[int]) -> tuple[list[int], list[int]]:
    """Ids and labels built independently: the render cut at the literal turn texts, each piece tokenized alone.

    Every piece boundary sits next to a special token, which BPE never merges across, so the pieces'
    tokens concatenate to the whole render's tokens (asserted by the caller)."""
    text = tokenizer.apply_chat_template(clean_messages(MESSAGES, "hermes"), tools=TOOLS, tokenize=False,
                                         chat_template=training_template(tokenizer))
    pieces: list[tuple[str, bool]] = []
    rest = text
    for turn, trained in zip(TURNS, keep):
        before, found, rest = rest.partition(turn)
        assert found, f"turn not rendered as expected: {turn!r}"
        pieces += [(before, False), (turn, bool(trained))]
    pieces.append((rest, False))
    assert "".join(p for p, _ in pieces) == text
    ids: list[int] = []
    labels: list[int] = []
    for piece, trained in pieces:
        piece_ids = tokenizer(piece, add_special_tokens=False)["input_ids"] if piece else []
        ids += piece_ids
        labels += piece_ids if trained else [IGNORE] * len(piece_ids)
    return ids, labels


def test_loss_covers_exactly_the_kept_assistant_turns(tokenizer) -> None:
    keep = [0, 1, 1]  # the first turn was answered by a 4xx error
    enc = encode_conversation(tokenizer, clean_messages(MESSAGES, "hermes"), TOOLS, keep, training_template(tokenizer))
    ids, labels = _expected(tokenizer, keep)
    assert enc.input_ids == ids
    reference = tokenizer.apply_chat_template(clean_messages(MESSAGES, "hermes"), tools=TOOLS, tokenize=True,
                                              return_dict=False, chat_template=training_template(tokenizer))
    assert enc.input_ids == list(reference)  # the same tokens the chat template gives
    assert enc.labels == labels
    trained = [i for i, label in enumerate(enc.labels) if label != IGNORE]
    # The trained positions are two runs: turn 2 and turn 3, each ending on <|im_end|>.
    runs = _runs(trained)
    assert len(runs) == 2
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for start, end in runs:
        assert enc.input_ids[end - 1] == eos and enc.input_ids[end] != eos
    assert [tokenizer.decode(enc.input_ids[s:e]) for s, e in runs] == TURNS[1:]
    # Nothing of system, user or tool messages is trained.
    for token_text in ("You are a careful clerk.", "Pay invoice 10 in full.", "No invoice 99.", '"paid": 100.0'):
        assert token_text not in tokenizer.decode([enc.input_ids[i] for i in trained])
    assert enc.trained == sum(e - s for s, e in runs)


def test_without_a_turn_mask_every_assistant_turn_trains(tokenizer) -> None:
    enc = encode_conversation(tokenizer, clean_messages(MESSAGES, "hermes"), TOOLS, None, training_template(tokenizer))
    assert enc.labels == _expected(tokenizer, [1, 1, 1])[1]
    masked = encode_conversation(tokenizer, clean_messages(MESSAGES, "hermes"), TOOLS, [0, 0, 0], training_template(tokenizer))
    assert masked.trained == 0 and len(masked.spans) == 3


def test_a_turn_mask_of_the_wrong_length_is_refused(tokenizer) -> None:
    with pytest.raises(EncodeError, match="turn_mask has 2 entries for 3 assistant messages"):
        encode_conversation(tokenizer, clean_messages(MESSAGES, "hermes"), TOOLS, [1, 1], training_template(tokenizer))


def test_tools_given_as_json_text_render_the_same(tokenizer) -> None:
    import json

    tpl = training_template(tokenizer)
    a = encode_conversation(tokenizer, clean_messages(MESSAGES, "hermes"), TOOLS, None, tpl)
    b = encode_conversation(tokenizer, clean_messages(MESSAGES, "hermes"), json.dumps(TOOLS), None, tpl)
    assert a == b


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for p in positions:
        if runs and runs[-1][1] == p:
            runs[-1] = (runs[-1][0], p + 1)
        else:
            runs.append((p, p + 1))
    return runs
