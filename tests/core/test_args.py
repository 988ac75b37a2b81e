"""Tool-call argument validation, fuzzed against every built-in tool's schema."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envtrain.apps import builtin_app_names, load_app
from envtrain.core import ErrorKind, ToolError
from envtrain.core.args import compile_validator

TOOLS = [(app, tool) for app in builtin_app_names() for tool in load_app(app).tools]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**9, 10**9) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(TOOLS), st.data())
def test_validation_accepts_or_names_the_field(pair, data) -> None:
    _, tool = pair
    props = list(tool.parameters.get("properties", {})) + ["unexpected"]
    args = data.draw(st.one_of(json_values, st.dictionaries(st.sampled_from(props), json_values, max_size=5)))
    try:
        compile_validator(tool.parameters)(args)
    except ToolError as exc:
        assert exc.kind in (ErrorKind.MISSING_FIELD, ErrorKind.MALFORMED_ARGUMENTS)
        assert exc.message
        if isinstance(args, dict) and exc.kind is ErrorKind.MISSING_FIELD:
            assert exc.details["field"] in tool.parameters.get("required", [])


@pytest.mark.parametrize(
    ("args", "kind", "message"),
    [
        ({}, ErrorKind.MISSING_FIELD, "missing required field 'to': recipient addresses"),
        ({"to": "a@x"}, ErrorKind.MALFORMED_ARGUMENTS, "'to' must be array, got 'a@x'"),
        ({"to": ["a@x", 3]}, ErrorKind.MALFORMED_ARGUMENTS, "'to[]' must be string, got 3"),
        ({"to": ["a@x"], "priority": "max"}, ErrorKind.MALFORMED_ARGUMENTS, "'priority' must be one of: low, high; got 'max'"),
        ({"to": ["a@x"], "count": 0}, ErrorKind.MALFORMED_ARGUMENTS, "'count' must be at least 1"),
        ({"to": ["a@x"], "subject": ""}, ErrorKind.MALFORMED_ARGUMENTS, "'subject' must have at least 1 characters"),
        ({"to": ["a@x"], "meta": {"tag": "t", "x": 1}}, ErrorKind.MALFORMED_ARGUMENTS, "unknown field 'meta.x'"),
        ({"to": ["a@x"], "meta": {}}, ErrorKind.MISSING_FIELD, "missing required field 'meta.tag'"),
        ({"to": ["a@x"], "cc": True}, ErrorKind.MALFORMED_ARGUMENTS, "'cc' must be array, got True"),
    ],
)
def test_validation_messages(args, kind, message) -> None:
    schema = {"type": "object", "required": ["to"], "properties": {
        "to": {"type": "array", "items": {"type": "string"}, "description": "recipient addresses"},
        "cc": {"type": "array"}, "priority": {"type": "string", "enum": ["low", "high"]},
        "count": {"type": "integer", "minimum": 1}, "subject": {"type": "string", "minLength": 1},
        "meta": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"], "additionalProperties": False},
    }}
    with pytest.raises(ToolError) as info:
        compile_validator(schema)(args)
    assert info.value.kind is kind and info.value.message == message
