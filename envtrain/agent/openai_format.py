"""The OpenAI chat-completions wire format, both ways: response choice <-> ``Generation``.

The HTTP client (``openai_http``) reads choices with ``choice_to_generation``; the project's own
server (``server``) writes them with ``generation_to_choice``. Keeping both directions in one file
keeps them from drifting apart. Pure functions, standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from envtrain.agent.parsers import DS_CALL_BEGIN, HERMES_OPEN, MISTRAL_CALLS, PYTHON_TAG, THINK_CLOSE, parse_completion
from envtrain.agent.types import Generation, ParsedTurn, ToolCall

FINISH_REASONS = ("stop", "length", "tool_calls", "error")

# Tool-call markup that only a model writing calls as text leaves in ``content``, most specific first.
# Bare JSON (llama3 without <|python_tag|>) is not guessed at: a JSON answer must stay content.
_CONTENT_MARKERS = ((DS_CALL_BEGIN, "deepseek"), (MISTRAL_CALLS, "mistral"), (HERMES_OPEN, "hermes"), (PYTHON_TAG, "llama3"))


def error_body(message: str, kind: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error document: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def content_text(content: Any) -> str:
    """Message content as plain text; servers send a string, ``None``, or a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return str(content)


def decode_tool_calls(raw_calls: list[Any], choice_index: int = 0) -> tuple[tuple[ToolCall, ...], tuple[str, ...]]:
    """``message.tool_calls`` to ``ToolCall``s.

    Arguments arrive as a JSON string. One that does not decode to an object is kept as its raw
    text and reported in the errors, so the rollout can show the model what went wrong.
    """
    calls: list[ToolCall] = []
    errors: list[str] = []
    for i, raw in enumerate(raw_calls):
        function = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            errors.append(f"tool call {i}: no function name in {json.dumps(raw, ensure_ascii=False)[:200]}")
            continue
        call_id = raw.get("id") or f"call_{choice_index}_{i}"
        arguments: dict[str, Any] | str = function.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                decoded = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                errors.append(f"tool call {i} ({function['name']}): arguments are not valid JSON ({exc.msg}): {arguments[:200]}")
            else:
                if isinstance(decoded, dict):
                    arguments = decoded
                else:
                    errors.append(f"tool call {i} ({function['name']}): arguments are not a JSON object: {arguments[:200]}")
        elif not isinstance(arguments, dict):
            # Not the OpenAI format, but seen from some servers: keep what came, as text.
            errors.append(f"tool call {i} ({function['name']}): arguments are neither a JSON string nor an object")
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(ToolCall(id=str(call_id), name=function["name"], arguments=arguments))
    return tuple(calls), tuple(errors)


def message_to_turn(message: dict[str, Any], choice_index: int = 0) -> ParsedTurn:
    """An OpenAI assistant message as a ``ParsedTurn`` (vLLM says ``reasoning``; older servers ``reasoning_content``)."""
    calls, errors = decode_tool_calls(message.get("tool_calls") or [], choice_index)
    reasoning = content_text(message.get("reasoning_content") or message.get("reasoning"))
    return ParsedTurn(content=content_text(message.get("content")), reasoning=reasoning, tool_calls=calls, errors=errors)


def reparse_content(turn: ParsedTurn, family: str | None = None) -> ParsedTurn:
    """Recover calls a server left in ``content`` as text (no server-side tool or reasoning parser).

    vLLM without ``--enable-auto-tool-choice``, ``transformers serve``, and this project's own server
    for a call that did not parse, all answer with the completion text as content. ``family`` forces
    a parser; ``None`` picks one by the markup found, and leaves content without markup alone.
    """
    if turn.tool_calls:
        return turn
    text = turn.content
    found = family or next((f for marker, f in _CONTENT_MARKERS if marker in text), None)
    if found is None and THINK_CLOSE not in text:
        return turn
    parsed = parse_completion(text, found or "hermes")
    reasoning = "\n".join(r for r in (turn.reasoning, parsed.reasoning) if r)
    return ParsedTurn(content=parsed.content, reasoning=reasoning, tool_calls=parsed.tool_calls, errors=turn.errors + parsed.errors)


def normalize_finish_reason(reason: Any, has_tool_calls: bool) -> str:
    """Map a server's finish reason onto ``Generation``'s four; servers disagree on tool calls."""
    if reason == "length":
        return "length"
    if reason == "error":
        return "error"
    if has_tool_calls or reason in ("tool_calls", "function_call"):
        return "tool_calls"
    return "stop"  # "stop", None, "content_filter", "eos" ...


def choice_logprobs(choice: dict[str, Any]) -> list[float] | None:
    """``choice.logprobs.content[*].logprob``, or ``None`` when the server sent none."""
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    return [float(item["logprob"]) for item in content]


def generation_to_choice(
    index: int,
    generation: Generation,
    *,
    logprobs: bool = False,
    token_ids: bool = False,
    token_text: Callable[[int], str] | None = None,
) -> dict[str, Any]:
    """One ``choices[i]`` entry; logprobs and token ids only where asked for and known.

    A turn whose tool-call text did not parse goes out as the raw text in ``content`` with no
    ``tool_calls``, as vLLM does, so a client can re-parse it and see the same errors.
    """
    turn = generation.turn
    if turn.errors:
        message: dict[str, Any] = {"role": "assistant", "content": generation.text, "tool_calls": None}
    else:
        message = {"role": "assistant", "content": turn.content,
                   "tool_calls": [c.to_openai() for c in turn.tool_calls] or None}
        if turn.reasoning:
            message["reasoning_content"] = turn.reasoning
    choice: dict[str, Any] = {"index": index, "message": message, "finish_reason": generation.finish_reason, "logprobs": None}
    if logprobs and generation.logprobs is not None:
        ids = generation.token_ids or [None] * len(generation.logprobs)
        choice["logprobs"] = {"content": [
            {"token": _token_str(tid, token_text), "logprob": lp, "bytes": None, "top_logprobs": []}
            for tid, lp in zip(ids, generation.logprobs)
        ]}
    if token_ids and generation.token_ids is not None:
        choice["token_ids"] = list(generation.token_ids)  # vLLM's ``return_token_ids`` field
    return choice


def _token_str(token_id: int | None, token_text: Callable[[int], str] | None) -> str:
    if token_id is None:
        return ""
    # vLLM's ``return_tokens_as_token_ids`` spelling, when no tokenizer is at hand.
    return token_text(token_id) if token_text else f"token_id:{token_id}"
