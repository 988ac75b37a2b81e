"""Validate tool-call arguments against the tool's JSON schema, with errors an agent can act on.

Covers the subset tool schemas use: object/array/string/integer/number/boolean/null types,
properties, required, enum, items, minimum/maximum, minLength/maxLength and
additionalProperties. A missing required field is ``missing_field``; anything else wrong is
``malformed_arguments``; both name the field. Unknown top-level arguments are refused, so a
misspelt name is never silently ignored.

Schemas are compiled once per tool into small closures (a step's validation is on the hot path).
"""

from __future__ import annotations

from typing import Any, Callable

from envtrain.core.errors import ErrorKind, ToolError

Check = Callable[[Any], None]

_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _malformed(message: str, field: str) -> ToolError:
    return ToolError(ErrorKind.MALFORMED_ARGUMENTS, message, field=field)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def compile_validator(schema: dict[str, Any]) -> Check:
    """A function that returns None for valid arguments and raises ToolError naming the first problem."""
    props: dict[str, Any] = schema.get("properties", {})
    required = tuple(schema.get("required", ()))
    hints = {n: (": " + props[n]["description"]) if props.get(n, {}).get("description") else "" for n in required}
    checks = {name: _compile(sub, name) for name, sub in props.items()}
    names = ", ".join(props) or "none"

    def validate(args: Any) -> None:
        if not isinstance(args, dict):
            raise _malformed(f"arguments must be a JSON object, got {type(args).__name__}", "")
        for name in required:
            if args.get(name) is None:
                raise ToolError(ErrorKind.MISSING_FIELD, f"missing required field '{name}'{hints[name]}", field=name)
        for name, value in args.items():
            check = checks.get(name)
            if check is None:
                raise _malformed(f"unknown argument {name!r} (arguments: {names})", name)
            if value is not None:
                check(value)

    return validate


def _compile(schema: dict[str, Any], path: str) -> Check:
    steps: list[Check] = []
    expected = schema.get("type")
    if expected is not None:
        kinds = expected if isinstance(expected, list) else [expected]
        tests = [_TYPES[k] for k in kinds if k in _TYPES]
        if tests:
            words = " or ".join(kinds)

            def typed(v: Any) -> None:
                if not any(t(v) for t in tests):
                    raise _malformed(f"'{path}' must be {words}, got {_show(v)}", path)
            steps.append(typed)
    if "enum" in schema:
        options = list(schema["enum"])
        listed = ", ".join(map(str, options))

        def member(v: Any) -> None:
            if v not in options:
                raise _malformed(f"'{path}' must be one of: {listed}; got {_show(v)}", path)
        steps.append(member)
    for key, word, measure, bad in (
        ("minimum", "at least", lambda v: v, lambda v, b: v < b),
        ("maximum", "at most", lambda v: v, lambda v, b: v > b),
        ("minLength", "at least", len, lambda v, b: v < b),
        ("maxLength", "at most", len, lambda v, b: v > b),
    ):
        if key in schema:
            bound, numeric = schema[key], key in ("minimum", "maximum")
            unit = "" if numeric else " characters"
            kind = (int, float) if numeric else str

            def bounded(v: Any, bound=bound, measure=measure, bad=bad, word=word, unit=unit, kind=kind, numeric=numeric) -> None:
                if isinstance(v, kind) and not isinstance(v, bool) and bad(measure(v), bound):
                    raise _malformed(f"'{path}' must {'be' if numeric else 'have'} {word} {bound}{unit}", path)
            steps.append(bounded)
    if "properties" in schema or "required" in schema:
        inner_required = tuple(schema.get("required", ()))
        inner = {name: _compile(sub, f"{path}.{name}") for name, sub in schema.get("properties", {}).items()}
        closed = schema.get("additionalProperties") is False

        def members(v: Any) -> None:
            if not isinstance(v, dict):
                return
            for name in inner_required:
                if v.get(name) is None:
                    raise ToolError(ErrorKind.MISSING_FIELD, f"missing required field '{path}.{name}'", field=f"{path}.{name}")
            for name, value in v.items():
                check = inner.get(name)
                if check is None:
                    if closed:
                        raise _malformed(f"unknown field '{path}.{name}'", f"{path}.{name}")
                elif value is not None:
                    check(value)
        steps.append(members)
    if "items" in schema:
        item_check = _compile(schema["items"], f"{path}[]")

        def items(v: Any) -> None:
            if isinstance(v, list):
                for item in v:
                    item_check(item)
        steps.append(items)
    if len(steps) == 1:
        return steps[0]

    def run(v: Any) -> None:
        for step in steps:
            step(v)
    return run


def validate_arguments(schema: dict[str, Any], args: Any) -> dict[str, Any]:
    """Validate once without keeping the compiled form (tests, one-off checks)."""
    compile_validator(schema)(args)
    return args
