"""Tokenize a trajectory for SFT with exact loss masks: assistant turns only, minus the turns its mask drops.

    enc = encode_conversation(tokenizer, messages, tools, turn_mask, template)
    enc.input_ids   # (L,) the conversation rendered once by the chat template, tools included
    enc.labels      # (L,) input_ids where the loss applies, -100 elsewhere

The conversation is rendered by a chat template with ``{% generation %}`` markers (TRL's training
templates; see ``training_template``). The renderer reports one character span per marked block,
that is one per assistant message, in order; tokens whose offsets overlap span j belong to
assistant message j. A token carries loss when its message is kept by ``turn_mask`` (0 = a turn
answered by a 4xx tool error, LegoEnv App. E, RES App. B) and it is not past that turn's end token:
the template's newline after ``<|im_end|>`` is glue the model never generates, so it is not trained.
System, user and tool messages are outside every span, so they never carry loss.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

IGNORE = -100  # the label value torch's cross-entropy skips


class EncodeError(ValueError):
    """A record the template cannot render with per-turn masks."""


@dataclass(frozen=True)
class Encoded:
    input_ids: list[int]  # (L,)
    labels: list[int]  # (L,) IGNORE outside trained assistant tokens
    spans: list[tuple[int, int]]  # one [start, end) token range per assistant message, before masking

    @property
    def trained(self) -> int:
        return sum(label != IGNORE for label in self.labels)


def training_template(tokenizer: Any, override: str | None = None) -> str:
    """The chat template to train with: ``override`` (a path or the text), the tokenizer's own when it has
    ``{% generation %}`` markers, else TRL's training variant of it (prefix-preserving, marked)."""
    if override:
        from pathlib import Path

        path = Path(override)
        return path.read_text(encoding="utf-8") if path.is_file() else override
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    own = tokenizer.chat_template
    if isinstance(own, str) and has_generation_markers(own):
        return own
    try:
        patched = get_training_chat_template(tokenizer)
    except ValueError as exc:  # a template TRL has no training variant for
        raise EncodeError(f"the tokenizer's chat template has no {{% generation %}} markers and TRL has no training "
                          f"variant of it; pass chat_template: PATH with one ({exc})") from None
    if patched is None:
        return own
    return patched


def clean_messages(messages: list[dict[str, Any]], family: str) -> list[dict[str, Any]]:
    """Dataset rows as the template wants them: no None-valued keys (Arrow fills every key in every message),
    tool-call arguments decoded the way the policy rendered them when the trajectory was collected."""
    from envtrain.agent.hf import prepare_messages

    cleaned = [{k: v for k, v in m.items() if v is not None} for m in messages]
    return prepare_messages(cleaned, family)


def encode_conversation(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | str | None,
    turn_mask: list[int] | None,
    template: str,
) -> Encoded:
    """Input ids and labels for one conversation (see the module docstring for the rule)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    if isinstance(tools, str):
        tools = json.loads(tools) if tools else None
    n_assistant = sum(m.get("role") == "assistant" for m in messages)
    if turn_mask is None:
        turn_mask = [1] * n_assistant
    if len(turn_mask) != n_assistant:
        raise EncodeError(f"turn_mask has {len(turn_mask)} entries for {n_assistant} assistant messages")
    rendered, indices = render_jinja_template(
        conversations=[messages], tools=tools or None, chat_template=template,
        return_assistant_tokens_mask=True, add_generation_prompt=False, **tokenizer.special_tokens_map,
    )
    text, char_spans = rendered[0], indices[0]
    if len(char_spans) != n_assistant:
        raise EncodeError(f"the chat template marked {len(char_spans)} generation blocks for {n_assistant} assistant messages")
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids: list[int] = enc["input_ids"]
    offsets: list[tuple[int, int]] = enc["offset_mapping"]
    spans = _token_spans(offsets, char_spans)
    eos = tokenizer.eos_token_id
    labels = [IGNORE] * len(ids)
    for (start, end), keep in zip(spans, turn_mask):
        if not keep:
            continue
        stop = end
        for i in range(start, end):  # the turn ends at its end token; what the template adds after it is glue
            if ids[i] == eos:
                stop = i + 1
                break
        labels[start:stop] = ids[start:stop]
    return Encoded(input_ids=ids, labels=labels, spans=spans)


def _token_spans(offsets: list[tuple[int, int]], char_spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Token ranges overlapping each character span (the rule transformers uses for assistant masks)."""
    out: list[tuple[int, int]] = []
    t = 0
    for c_start, c_end in char_spans:
        while t < len(offsets) and offsets[t][1] <= c_start:
            t += 1
        start = t
        while t < len(offsets) and offsets[t][0] < c_end:
            t += 1
        out.append((start, t))
        # a token straddling two spans is not possible here: spans are separated by role headers
    return out


__all__ = ["IGNORE", "EncodeError", "Encoded", "clean_messages", "encode_conversation", "training_template"]
