"""Split a raw assistant completion into reasoning, content and tool calls, per model family.

    turn = parse_completion(text, "hermes")   # never raises: what does not parse lands in turn.errors
    text = render_turn(turn, "hermes")         # the inverse, as the family's chat template writes calls

Families and what their models write:

* ``hermes``   Qwen2.5/Qwen3, Hermes: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, repeated
* ``llama3``   Llama 3.1+: ``[<|python_tag|>]{"name": ..., "parameters": {...}}``, several joined by ``;`` or newlines
* ``mistral``  ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]`` (and the newer ``[TOOL_CALLS]name[ARGS]{...}``)
* ``deepseek`` V3/R1: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{...}\\n```<｜tool▁call▁end｜>...``
  (token spellings as in DeepSeek-V3's chat template, ``trl/chat_templates/deepseekv3.jinja``); V3.1's
  ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>`` is read too.

Reasoning in ``<think>...</think>`` is kept in ``ParsedTurn.reasoning``; a completion holding only a closing
``</think>`` (the template opened the block in the prompt, as DeepSeek-R1 does) counts what precedes it as
reasoning. Call ids are ``call_<i>``, numbered over the turn's parsed calls, so replays are deterministic.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Literal

from envtrain.agent.types import ParsedTurn, ToolCall

Family = Literal["hermes", "llama3", "mistral", "deepseek"]
FAMILIES: tuple[Family, ...] = ("hermes", "llama3", "mistral", "deepseek")

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"
PYTHON_TAG = "<|python_tag|>"
MISTRAL_CALLS, MISTRAL_ARGS = "[TOOL_CALLS]", "[ARGS]"
DS_CALLS_BEGIN, DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL_BEGIN, DS_CALL_END, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"

_DECODER = json.JSONDecoder()
_DS_FENCED = re.compile(r"\s*(?P<name>[^\n`]*?)\s*\n?```(?:json)?[ \t]*\n?(?P<args>.*?)\n?[ \t]*```\s*\Z", re.DOTALL)
_SNIPPET = 60  # characters of offending text quoted in an error


class _Calls:
    """Accumulates one turn's calls and errors; numbers calls in order of appearance."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.errors: list[str] = []

    def error(self, what: str, text: str) -> None:
        snippet = text.strip()
        if len(snippet) > _SNIPPET:
            snippet = snippet[:_SNIPPET] + "..."
        self.errors.append(f"tool call {len(self.calls) + len(self.errors)}: {what}: {snippet!r}")

    def add(self, name: Any, arguments: Any, source: str) -> None:
        if not isinstance(name, str) or not name.strip():
            self.error("no function name", source)
            return
        args = _arguments(arguments)
        if args is None:
            self.error(f"arguments must be a JSON object, got {type(arguments).__name__}", source)
            return
        self.calls.append(ToolCall(id=f"call_{len(self.calls)}", name=name.strip(), arguments=args))

    def add_object(self, obj: Any, source: str, *, args_key: str = "arguments") -> None:
        """A decoded ``{"name", "arguments"|"parameters"}`` envelope."""
        if not isinstance(obj, dict):
            self.error(f"expected a JSON object, got {type(obj).__name__}", source)
            return
        if isinstance(obj.get("function"), dict):  # OpenAI's nesting, which some fine-tunes copy
            obj = obj["function"]
        other = "parameters" if args_key == "arguments" else "arguments"
        self.add(obj.get("name"), obj.get(args_key, obj.get(other, {})), source)

    def add_json(self, text: str, **kw: str) -> None:
        try:
            obj = json.loads(text)
        except _JSON_FAILURES as exc:
            self.error(_json_failure(exc), text)
            return
        self.add_object(obj, text, **kw)


# What json raises on model text: malformed input, an integer past Python's digit limit, absurd nesting.
_JSON_FAILURES = (ValueError, RecursionError)


def _json_failure(exc: BaseException, offset: int = 0) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON ({exc.msg} at {exc.pos - offset})"
    return f"invalid JSON ({type(exc).__name__}: {str(exc)[:80]})"


def _arguments(value: Any) -> dict[str, Any] | str | None:
    """The decoded argument object; a string that is not a JSON object stays raw, for the tool to reject."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except _JSON_FAILURES:
            return value
        return decoded if isinstance(decoded, dict) else value
    return None


def split_reasoning(text: str) -> tuple[str, str]:
    """``(reasoning, rest)``: the ``<think>`` block (or what precedes a lone ``</think>``) and the text around it."""
    close = text.find(THINK_CLOSE)
    open_ = text.find(THINK_OPEN)
    if close >= 0 and 0 <= open_ < close:
        return text[open_ + len(THINK_OPEN) : close].strip("\n"), text[:open_] + text[close + len(THINK_CLOSE) :]
    if close >= 0:  # the prompt opened the block
        return text[:close].strip("\n"), text[close + len(THINK_CLOSE) :]
    if open_ >= 0:  # cut off while thinking
        return text[open_ + len(THINK_OPEN) :].strip("\n"), text[:open_]
    return "", text


def _join(*parts: str) -> str:
    """Prose left around the calls, one stripped piece per line."""
    return "\n".join(p.strip() for p in parts if p.strip())


def _parse_hermes(text: str, out: _Calls) -> str:
    content: list[str] = []
    pos = 0
    while (start := text.find(HERMES_OPEN, pos)) >= 0:
        content.append(text[pos:start])
        body_start = start + len(HERMES_OPEN)
        end = text.find(HERMES_CLOSE, body_start)
        body = text[body_start:] if end < 0 else text[body_start:end]  # an unclosed last call: cut off or stopped at the tag
        out.add_json(body)
        pos = len(text) if end < 0 else end + len(HERMES_CLOSE)
    content.append(text[pos:])
    return _join(*content)


def _decode_sequence(text: str, out: _Calls, *, separators: str, args_key: str) -> str:
    """Decode JSON values one after another (``{..}; {..}`` or ``[{..}, {..}]``); return trailing prose."""
    pos = 0
    while True:
        while pos < len(text) and text[pos] in separators:
            pos += 1
        if pos >= len(text):
            return ""
        if text[pos] not in "{[":
            return text[pos:]
        try:
            obj, end = _DECODER.raw_decode(text, pos)
        except _JSON_FAILURES as exc:
            out.error(_json_failure(exc, pos), text[pos:])
            return ""
        for item in obj if isinstance(obj, list) else [obj]:
            out.add_object(item, text[pos:end], args_key=args_key)
        pos = end


def _looks_like_call(text: str) -> bool:
    """Llama writes bare JSON, so JSON that is no call envelope (a JSON answer) stays content."""
    try:
        obj, _ = _DECODER.raw_decode(text)
    except _JSON_FAILURES:
        return '"name"' in text  # a broken call attempt rather than prose
    return isinstance(obj, dict) and ("name" in obj or "parameters" in obj or "function" in obj)


def _parse_llama3(text: str, out: _Calls) -> str:
    tag = text.find(PYTHON_TAG)
    if tag >= 0:
        prose, calls = text[:tag], text[tag + len(PYTHON_TAG) :]
    elif text.lstrip().startswith("{") and _looks_like_call(text.lstrip()):
        prose, calls = "", text
    else:
        return text
    rest = _decode_sequence(calls, out, separators=" \t\r\n;", args_key="parameters")
    return _join(prose, rest)


def _parse_mistral(text: str, out: _Calls) -> str:
    first = text.find(MISTRAL_CALLS)
    if first < 0:
        return text
    prose = [text[:first]]
    for segment in text[first + len(MISTRAL_CALLS) :].split(MISTRAL_CALLS):
        body = segment.strip()
        if not body:
            continue
        if body[0] in "[{":
            prose.append(_decode_sequence(body, out, separators=" \t\r\n,", args_key="arguments"))
        elif MISTRAL_ARGS in body:
            name, _, args = body.partition(MISTRAL_ARGS)
            out.add(name, args.strip(), body)
        else:
            out.error("expected a JSON list of calls or NAME[ARGS]{...}", body)
    return _join(*prose)


def _parse_deepseek(text: str, out: _Calls) -> str:
    starts = [i for i in (text.find(DS_CALLS_BEGIN), text.find(DS_CALL_BEGIN)) if i >= 0]
    if not starts:
        return text
    first = min(starts)
    prose, region = text[:first], text[first:]
    after = ""
    if DS_CALLS_END in region:
        region, after = region.split(DS_CALLS_END, 1)
    for chunk in region.split(DS_CALL_BEGIN)[1:]:
        body = chunk.split(DS_CALL_END, 1)[0]  # an unclosed last call: cut off
        if DS_SEP not in body:
            out.error("no <｜tool▁sep｜> between type and name", body)
            continue
        head, tail = body.split(DS_SEP, 1)
        fenced = _DS_FENCED.match(tail)
        if fenced:  # V3: type<sep>name + fenced JSON
            out.add(fenced["name"], fenced["args"].strip(), body)
        elif head.strip() == "function" and "\n" in tail.strip():  # V3 without the fence
            name, _, args = tail.strip().partition("\n")
            out.add(name, args.strip(), body)
        else:  # V3.1: name<sep>JSON
            out.add(head, tail.strip(), body)
    return _join(prose, after)


_PARSERS: dict[str, Callable[[str, _Calls], str]] = {
    "hermes": _parse_hermes,
    "llama3": _parse_llama3,
    "mistral": _parse_mistral,
    "deepseek": _parse_deepseek,
}


def parse_completion(text: str, family: str = "hermes") -> ParsedTurn:
    """Parse one completion; never raises on the model's text (an unknown family is the caller's bug)."""
    parser = _PARSERS.get(family)
    if parser is None:
        raise ValueError(f"unknown tool-call family {family!r} (known: {', '.join(FAMILIES)})")
    reasoning, rest = split_reasoning(text)
    out = _Calls()
    content = parser(rest, out)
    return ParsedTurn(content=content.strip(), reasoning=reasoning, tool_calls=tuple(out.calls), errors=tuple(out.errors))


def _args_json(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)


def render_turn(turn: ParsedTurn, family: str = "hermes") -> str:
    """The completion text a model of ``family`` would write for ``turn`` (errors are not rendered)."""
    parts = [f"{THINK_OPEN}\n{turn.reasoning}\n{THINK_CLOSE}\n\n"] if turn.reasoning else []
    parts.append(turn.content)
    calls = turn.tool_calls
    if not calls:
        return "".join(parts)
    sep = "\n" if turn.content else ""
    if family == "hermes":
        parts += [f'{sep if i == 0 else chr(10)}{HERMES_OPEN}\n{{"name": {json.dumps(c.name, ensure_ascii=False)}, '
                  f'"arguments": {_args_json(c)}}}\n{HERMES_CLOSE}' for i, c in enumerate(calls)]
    elif family == "llama3":
        body = "; ".join(f'{{"name": {json.dumps(c.name, ensure_ascii=False)}, "parameters": {_args_json(c)}}}' for c in calls)
        parts.append(f"{PYTHON_TAG}{body}" if turn.content else body)
    elif family == "mistral":
        body = ", ".join(f'{{"name": {json.dumps(c.name, ensure_ascii=False)}, "arguments": {_args_json(c)}}}' for c in calls)
        parts.append(f"{MISTRAL_CALLS} [{body}]")
    elif family == "deepseek":
        body = "\n".join(f"{DS_CALL_BEGIN}function{DS_SEP}{c.name}\n```json\n{_args_json(c)}\n```{DS_CALL_END}" for c in calls)
        parts.append(f"{DS_CALLS_BEGIN}{body}{DS_CALLS_END}")
    else:
        raise ValueError(f"unknown tool-call family {family!r} (known: {', '.join(FAMILIES)})")
    return "".join(parts)


# Markers a chat template writes only when it renders tool calls of that family, most specific first.
_TEMPLATE_MARKERS: tuple[tuple[str, Family], ...] = (
    ("tool▁call", "deepseek"),
    (MISTRAL_CALLS, "mistral"),
    (HERMES_OPEN, "hermes"),
    (PYTHON_TAG, "llama3"),
    ("<|start_header_id|>", "llama3"),
)
# Name fragments, checked in order: a fine-tune's format beats its base model's (Hermes-3-Llama-3.1 writes
# <tool_call>, DeepSeek-R1-Distill-Llama writes DeepSeek's).
_NAME_MARKERS: tuple[tuple[str, Family], ...] = (
    ("deepseek", "deepseek"),
    ("hermes", "hermes"),
    ("mistral", "mistral"), ("mixtral", "mistral"), ("ministral", "mistral"), ("magistral", "mistral"), ("devstral", "mistral"),
    ("llama-3", "llama3"), ("llama3", "llama3"), ("llama-4", "llama3"),
    ("qwen", "hermes"),
)


def _template_text(source: Any) -> str:
    template = getattr(source, "chat_template", None)
    if isinstance(source, (str, Path)):
        folder = Path(source)
        if folder.is_dir():  # a local checkpoint: read its template file without loading a tokenizer
            if (folder / "chat_template.jinja").is_file():
                return (folder / "chat_template.jinja").read_text(encoding="utf-8")
            try:
                template = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8")).get("chat_template")
            except (OSError, ValueError):
                template = None
    if isinstance(template, dict):  # named templates ("default", "tool_use")
        template = "\n".join(str(v) for v in template.values())
    if isinstance(template, list):
        template = "\n".join(str(t.get("template", "")) for t in template if isinstance(t, dict))
    return template if isinstance(template, str) else ""


def detect_family(tokenizer_or_name: Any) -> Family:
    """The tool-call family from a tokenizer's chat template, else its name or path; ``hermes`` by default."""
    template = _template_text(tokenizer_or_name)
    for marker, family in _TEMPLATE_MARKERS:
        if marker in template:
            return family
    if isinstance(tokenizer_or_name, (str, Path)):
        name = str(tokenizer_or_name)
    else:
        name = str(getattr(tokenizer_or_name, "name_or_path", "") or "")
    lowered = name.lower()
    for marker, family in _NAME_MARKERS:
        if marker in lowered:
            return family
    return "hermes"


__all__ = ["FAMILIES", "Family", "detect_family", "parse_completion", "render_turn", "split_reasoning"]
