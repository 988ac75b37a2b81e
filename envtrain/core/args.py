"""Validate tool-call arguments against the tool's JSON schema, with errors an agent can act on.

Covers the subset tool schemas use: object/array/string/integer/number/boolean/null types,
properties, required, enum, items, minimum/maximum, minLength/maxLength and
additionalProperties. A missing required field is ``missing_field``; anything else wrong is
``malformed_arguments``; both name the field.
"""

from __future__ import annotations

from typing import Any

from envtrain.core.errors import ErrorKind, ToolError

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def validate_arguments(schema: dict[str, Any], args: Any) -> dict[str, Any]:
    """Return the arguments if they fit ``schema``; raise ToolError naming the first problem."""
    if not isinstance(args, dict):
        raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"arguments must be a JSON object, got {type(args).__name__}")
    for name in schema.get("required", ()):
        if args.get(name) is None:
            described = schema.get("properties", {}).get(name, {}).get("description", "")
            hint = f": {described}" if described else ""
            raise ToolError(ErrorKind.MISSING_FIELD, f"missing required field '{name}'{hint}", field=name)
    _check(schema, args, "")
    return args


def _check(schema: dict[str, Any], value: Any, path: str) -> None:
    where = path or "arguments"
    expected = schema.get("type")
    if expected is not None:
        kinds = expected if isinstance(expected, list) else [expected]
        if not any(_TYPES.get(k, lambda v: True)(value) for k in kinds):
            raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"'{where}' must be {' or '.join(kinds)}, got {_show(value)}", field=path)
    if "enum" in schema and value not in schema["enum"]:
        options = ", ".join(map(str, schema["enum"]))
        raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"'{where}' must be one of: {options}; got {_show(value)}", field=path)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"'{where}' must be at least {schema['minimum']}", field=path)
        if "maximum" in schema and value > schema["maximum"]:
            raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"'{where}' must be at most {schema['maximum']}", field=path)
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"'{where}' must have at least {schema['minLength']} characters", field=path)
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise ToolError(ErrorKind.MALFORMED_ARGUMENTS, f"'{where}' must have at most {schema['maxLength']} characters", field=path)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is False or (path == "" and props):
            # Top-level unknown arguments are refused: a misspelt name would otherwise be ignored silently.
            unknown = sorted(set(value) - set(props))
            if unknown:
                raise ToolError(ErrorKind.MALFORMED_ARGUMENTS,
                                f"unknown argument {unknown[0]!r} (arguments: {', '.join(props) or 'none'})", field=unknown[0])
        for name, sub in props.items():
            if name in value and value[name] is not None:
                _check(sub, value[name], f"{path}.{name}" if path else name)
        if path:
            for name in schema.get("required", ()):
                if value.get(name) is None:
                    raise ToolError(ErrorKind.MISSING_FIELD, f"missing required field '{path}.{name}'", field=f"{path}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(schema["items"], item, f"{where}[{i}]")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
