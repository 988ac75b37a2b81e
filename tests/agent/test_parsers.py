"""Tool-call parsers: exact results per family, and fuzzing (never raise, round-trip, unicode survives)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envtrain.agent.parsers import (
    DS_CALL_BEGIN,
    DS_CALL_END,
    DS_CALLS_BEGIN,
    DS_CALLS_END,
    DS_SEP,
    FAMILIES,
    detect_family,
    parse_completion,
    render_turn,
    split_reasoning,
)
from envtrain.agent.types import ParsedTurn, ToolCall


def call(i: int, name: str, arguments: dict[str, Any] | str) -> ToolCall:
    return ToolCall(id=f"call_{i}", name=name, arguments=arguments)


# --- exact results --------------------------------------------------------------------------------

HERMES_TWO = (
    "I'll pay it.\n"
    '<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10, "amount": 100.0}}\n</tool_call>\n'
    '<tool_call>\n{"name": "list_invoices", "arguments": "{\\"status\\": \\"paid\\"}"}\n</tool_call>'
)


def test_hermes_two_calls_content_and_string_arguments() -> None:
    assert parse_completion(HERMES_TWO, "hermes") == ParsedTurn(
        content="I'll pay it.",
        tool_calls=(call(0, "pay_invoice", {"invoice_id": 10, "amount": 100.0}), call(1, "list_invoices", {"status": "paid"})),
    )


def test_hermes_reasoning_and_unclosed_last_call() -> None:
    text = '<think>\nApproved, so pay.\n</think>\n\n<tool_call>\n{"name": "pay_invoice", "arguments": {"invoice_id": 10}}\n'
    assert parse_completion(text, "hermes") == ParsedTurn(reasoning="Approved, so pay.", tool_calls=(call(0, "pay_invoice", {"invoice_id": 10}),))


def test_hermes_errors_do_not_stop_the_other_calls() -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": {"x": 1}</tool_call>'  # a brace short
        '<tool_call>{"arguments": {}}</tool_call>'  # no name
        '<tool_call>{"name": "b", "arguments": [1, 2]}</tool_call>'  # arguments not an object
        '<tool_call>{"name": "c", "arguments": "not json"}</tool_call>'  # raw string kept for the tool to reject
        '<tool_call>{"name": "d"}</tool_call>'
    )
    turn = parse_completion(text, "hermes")
    assert turn.tool_calls == (call(0, "c", "not json"), call(1, "d", {}))
    assert turn.errors == (
        "tool call 0: invalid JSON (Expecting ',' delimiter at 35): '{\"name\": \"a\", \"arguments\": {\"x\": 1}'",
        "tool call 1: no function name: '{\"arguments\": {}}'",
        "tool call 2: arguments must be a JSON object, got list: '{\"name\": \"b\", \"arguments\": [1, 2]}'",
    )
    assert turn.content == ""


def test_plain_answer_is_content_in_every_family() -> None:
    for family in FAMILIES:
        assert parse_completion("  The invoice is paid.\n", family) == ParsedTurn(content="The invoice is paid.")


def test_llama3_python_tag_and_separators() -> None:
    text = 'Checking.<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "parameters": {}}'
    assert parse_completion(text, "llama3") == ParsedTurn(
        content="Checking.", tool_calls=(call(0, "get_weather", {"city": "Paris"}), call(1, "get_time", {}))
    )
    bare = '{"name": "get_weather", "parameters": {"city": "Paris"}}\n{"name": "get_time", "arguments": {"tz": "UTC"}}'
    assert parse_completion(bare, "llama3").tool_calls == (call(0, "get_weather", {"city": "Paris"}), call(1, "get_time", {"tz": "UTC"}))


def test_llama3_json_answer_is_not_a_call() -> None:
    assert parse_completion('{"total": 42}', "llama3") == ParsedTurn(content='{"total": 42}')
    broken = parse_completion('{"name": "get_weather", "parameters": {"city": ', "llama3")
    assert broken.tool_calls == () and broken.errors[0].startswith("tool call 0: invalid JSON")


def test_mistral_list_and_args_forms() -> None:
    text = 'Sure. [TOOL_CALLS] [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]'
    assert parse_completion(text, "mistral") == ParsedTurn(content="Sure.", tool_calls=(call(0, "a", {"x": 1}), call(1, "b", {})))
    newer = '[TOOL_CALLS]a[ARGS]{"x": 1}[TOOL_CALLS]b[ARGS]{"y": [true, null]}'
    assert parse_completion(newer, "mistral").tool_calls == (call(0, "a", {"x": 1}), call(1, "b", {"y": [True, None]}))
    assert parse_completion("[TOOL_CALLS] nonsense", "mistral").errors == (
        "tool call 0: expected a JSON list of calls or NAME[ARGS]{...}: 'nonsense'",
    )


def test_deepseek_v3_fenced_calls() -> None:
    text = (
        f"Let me look.{DS_CALLS_BEGIN}{DS_CALL_BEGIN}function{DS_SEP}get_weather\n```json\n{{\"city\": \"Paris\"}}\n```{DS_CALL_END}\n"
        f"{DS_CALL_BEGIN}function{DS_SEP}get_time\n```json\n{{}}\n```{DS_CALL_END}{DS_CALLS_END}"
    )
    assert parse_completion(text, "deepseek") == ParsedTurn(
        content="Let me look.", tool_calls=(call(0, "get_weather", {"city": "Paris"}), call(1, "get_time", {}))
    )


def test_deepseek_r1_reasoning_v31_calls_and_errors() -> None:
    # R1's template opens <think> in the prompt, so the completion holds only the close.
    text = f"Paris first.\n</think>\n\n{DS_CALLS_BEGIN}{DS_CALL_BEGIN}get_weather{DS_SEP}{{\"city\": \"Paris\"}}{DS_CALL_END}{DS_CALLS_END}"
    assert parse_completion(text, "deepseek") == ParsedTurn(reasoning="Paris first.", tool_calls=(call(0, "get_weather", {"city": "Paris"}),))
    bad = f"{DS_CALLS_BEGIN}{DS_CALL_BEGIN}get_weather{DS_CALL_END}{DS_CALL_BEGIN}function{DS_SEP}f\n```json\n{{oops\n```{DS_CALL_END}"
    turn = parse_completion(bad, "deepseek")
    assert turn.tool_calls == (call(0, "f", "{oops"),)
    assert turn.errors == ("tool call 0: no <｜tool▁sep｜> between type and name: 'get_weather'",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>\nplan\n</think>\n\nanswer", ("plan", "\n\nanswer")),
        ("plan</think>answer", ("plan", "answer")),
        ("answer<think>cut off", ("cut off", "answer")),
        ("no reasoning", ("", "no reasoning")),
    ],
)
def test_split_reasoning(text: str, expected: tuple[str, str]) -> None:
    assert split_reasoning(text) == expected


def test_calls_inside_reasoning_are_not_run() -> None:
    text = '<think><tool_call>{"name": "a", "arguments": {}}</tool_call></think>done'
    assert parse_completion(text, "hermes") == ParsedTurn(content="done", reasoning='<tool_call>{"name": "a", "arguments": {}}</tool_call>')


@pytest.mark.parametrize("family", FAMILIES)
def test_json_that_python_refuses_is_an_error(family: str) -> None:
    # json raises RecursionError on deep nesting and ValueError past 4300 integer digits: neither may escape.
    for args in ("[" * 100_000 + "]" * 100_000, "1" * 5000):
        turn = ParsedTurn(tool_calls=(call(0, "f", {"a": 1}),))
        text = render_turn(turn, family).replace('{"a": 1}', '{"a": ' + args + "}")
        parsed = parse_completion(text, family)
        assert parsed.tool_calls == () or isinstance(parsed.tool_calls[0].arguments, str)
        assert parsed.tool_calls or parsed.errors[0].startswith("tool call 0: invalid JSON (")


def test_unknown_family_is_the_callers_error() -> None:
    with pytest.raises(ValueError, match="unknown tool-call family 'gpt'"):
        parse_completion("x", "gpt")


# --- family detection -----------------------------------------------------------------------------


def _trl_template(name: str) -> str:
    import importlib.util

    spec = importlib.util.find_spec("trl")
    assert spec is not None and spec.submodule_search_locations
    return (Path(next(iter(spec.submodule_search_locations))) / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


class _Tok:
    def __init__(self, chat_template: Any, name_or_path: str = "") -> None:
        self.chat_template = chat_template
        self.name_or_path = name_or_path


@pytest.mark.parametrize(
    ("template", "family"),
    [("qwen3", "hermes"), ("qwen2_5", "hermes"), ("llama3_1", "llama3"), ("llama3_2", "llama3"), ("deepseekv3", "deepseek")],
)
def test_detect_family_from_trl_templates(template: str, family: str) -> None:
    assert detect_family(_Tok(_trl_template(template), "mistralai/Mistral-7B-Instruct-v0.3")) == family  # the template outranks the name


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("Qwen/Qwen3-8B", "hermes"),
        ("NousResearch/Hermes-3-Llama-3.1-8B", "hermes"),  # the fine-tune's format, not its base model's
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3"),
        ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistral"),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "deepseek"),
        ("some/unknown-model", "hermes"),
    ],
)
def test_detect_family_from_names(name: str, family: str) -> None:
    assert detect_family(name) == family
    assert detect_family(_Tok(None, name)) == family


def test_detect_family_from_a_checkpoint_folder(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "[TOOL_CALLS] {{ messages }}"}), encoding="utf-8")
    assert detect_family(tmp_path) == "mistral"
    (tmp_path / "chat_template.jinja").write_text(_trl_template("deepseekv3"), encoding="utf-8")
    assert detect_family(str(tmp_path)) == "deepseek"


# --- fuzzing --------------------------------------------------------------------------------------

MARKERS = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]",
           DS_CALLS_BEGIN, DS_CALLS_END, DS_CALL_BEGIN, DS_CALL_END, DS_SEP, "```json\n", "```", "{", "}", "[", "]",
           '"name"', '"arguments"', '"parameters"', ":", ",", ";", '"', "\n", "function")

marked_text = st.lists(st.one_of(st.sampled_from(MARKERS), st.text(max_size=8)), max_size=30).map("".join)

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text())
json_values = st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=4)), max_leaves=12)
arguments = st.dictionaries(st.text(), json_values, max_size=5).filter(
    lambda a: not any(m in json.dumps(a, ensure_ascii=False) for m in MARKERS[:12])  # a marker inside a string would end the call early
)
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,30}", fullmatch=True)
prose = st.text(alphabet=st.characters(blacklist_characters="<>[]{}｜", blacklist_categories=("Cs",)), max_size=40)


@st.composite
def turns(draw: st.DrawFn) -> ParsedTurn:
    calls = draw(st.lists(st.tuples(names, arguments), max_size=4))
    return ParsedTurn(
        content=draw(prose).strip(),
        reasoning=draw(prose).strip("\n"),
        tool_calls=tuple(call(i, n, a) for i, (n, a) in enumerate(calls)),
    )


def _well_formed(turn: ParsedTurn) -> None:
    assert isinstance(turn, ParsedTurn)
    assert [c.id for c in turn.tool_calls] == [f"call_{i}" for i in range(len(turn.tool_calls))]
    assert all(c.name and c.name == c.name.strip() for c in turn.tool_calls)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(), marked_text), family=st.sampled_from(FAMILIES))
def test_random_text_never_raises(text: str, family: str) -> None:
    _well_formed(parse_completion(text, family))


@settings(max_examples=200, deadline=None)
@given(turn=turns(), family=st.sampled_from(FAMILIES))
def test_valid_calls_round_trip_exactly(turn: ParsedTurn, family: str) -> None:
    assert parse_completion(render_turn(turn, family), family) == turn


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turn=turns(), family=st.sampled_from(FAMILIES), data=st.data())
def test_mutated_calls_never_raise(turn: ParsedTurn, family: str, data: st.DataObject) -> None:
    text = render_turn(turn, family)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(text)))
        j = data.draw(st.integers(i, min(len(text), i + 12)))
        op = data.draw(st.sampled_from(("delete", "insert", "duplicate", "truncate")))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + data.draw(st.one_of(st.sampled_from(MARKERS), st.text(max_size=3))) + text[i:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i]
    _well_formed(parse_completion(text, family))


UNICODE_ARGS = {"city": "東京", "note": "naïve café ✓ 🚀", "rtl": "שלום", "combining": "e\u0301", "ctrl": "tab\tnew\nline \"q\" \\", "ключ": ["Ω", {"ß": None}]}


@pytest.mark.parametrize("family", FAMILIES)
def test_unicode_arguments_survive(family: str) -> None:
    turn = ParsedTurn(content="Über 9000 — ok", reasoning="思考", tool_calls=(call(0, "search_ünïcode", UNICODE_ARGS),))
    text = render_turn(turn, family)
    assert "東京" in text  # written as characters, not \u escapes, as the templates do
    assert parse_completion(text, family) == turn
