"""BFCL API state as JSON, both ways, and a digest that is equal exactly when BFCL's state check
says "equal".

``encode_state``/``decode_state`` carry a whole instance (private attributes too: the current
directory, the seeded random generator) through JSON so a world row can hold it between tool
calls. It is data, never code: objects are rebuilt only from an allow-list of classes defined
in BFCL's API modules, and dict order, tuples, sets and shared references survive the trip.

``state_digest`` mirrors ``multi_turn_checker._compare_instances``: it covers the public
attributes only and compares values the way Python's ``==`` does (dict order ignored, 1 == 1.0,
File and Directory by the fields their ``__eq__`` reads).
"""

from __future__ import annotations

import datetime
import hashlib
import importlib
import json
import random
from typing import Any

_MODULE_PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code."
# Written by BFCL from the wall clock and never read: left out so a world's hash is reproducible.
_VOLATILE = {"File": ("_last_modified",)}
_FIXED_TIME = datetime.datetime(2024, 1, 1)
# The fields BFCL's own __eq__ compares, for classes that define one.
_EQ_FIELDS = {"File": ("name", "content"), "Directory": ("name", "contents")}
_TAGS = ("$obj", "$ref", "$tuple", "$set", "$items", "$random", "$datetime")


class StateCodecError(ValueError):
    """A state that is not BFCL's (an unknown class, a malformed tag)."""


def api_class(class_name: str) -> type:
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    if class_name not in CLASS_FILE_PATH_MAPPING:
        raise StateCodecError(f"unknown BFCL API class {class_name!r}")
    return getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)


def _allowed(qualname: str) -> type:
    """``module.Class`` inside BFCL's API package, defined there (not merely imported)."""
    module_name, _, name = qualname.rpartition(".")
    if not module_name or "." in module_name:
        raise StateCodecError(f"unknown class {qualname!r} in a BFCL state")
    try:
        module = importlib.import_module(_MODULE_PREFIX + module_name)
    except ImportError:
        raise StateCodecError(f"unknown module {module_name!r} in a BFCL state") from None
    cls = getattr(module, name, None)
    if not isinstance(cls, type) or cls.__module__ != module.__name__:
        raise StateCodecError(f"unknown class {qualname!r} in a BFCL state")
    return cls


# --- the whole state, both ways --------------------------------------------------------------


def encode_state(instance: Any) -> dict[str, Any]:
    """An API instance's attributes as JSON data (the instance is object 0 for references)."""
    memo: dict[int, int] = {id(instance): 0}
    return {"$attrs": _encode(vars(instance), memo)}


def decode_state(class_name: str, data: dict[str, Any]) -> Any:
    """Rebuild an instance of ``class_name`` from ``encode_state``'s output, without running ``__init__``."""
    cls = api_class(class_name)
    instance = cls.__new__(cls)
    memo: dict[int, Any] = {0: instance}
    if not isinstance(data, dict) or "$attrs" not in data:
        raise StateCodecError(f"a {class_name} state is an object with '$attrs'")
    attrs = _decode(data["$attrs"], memo)
    if not isinstance(attrs, dict):
        raise StateCodecError(f"a {class_name} state's '$attrs' is an object")
    instance.__dict__.update(attrs)
    return instance


def _encode(value: Any, memo: dict[int, int]) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_encode(v, memo) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v, memo) for v in value]}
    if isinstance(value, (set, frozenset)):
        items = [_encode(v, memo) for v in value]
        return {"$set": sorted(items, key=_sort_key)}  # sets have no order to keep; sorted for a stable hash
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            out = {k: _encode(v, memo) for k, v in value.items()}
            keys = list(value)
            if keys != sorted(keys):  # insertion order shows through BFCL's outputs (ls); JSON objects lose it
                out["$order"] = keys
            return out
        return {"$items": [[_encode(k, memo), _encode(v, memo)] for k, v in value.items()]}
    if isinstance(value, random.Random):
        version, internal, gauss = value.getstate()
        return {"$random": [version, list(internal), gauss]}
    if isinstance(value, datetime.datetime):
        return {"$datetime": value.isoformat()}
    cls = type(value)
    if cls.__module__.startswith(_MODULE_PREFIX):
        if id(value) in memo:
            return {"$ref": memo[id(value)]}
        memo[id(value)] = len(memo)
        skip = _VOLATILE.get(cls.__name__, ())
        attrs = {k: v for k, v in vars(value).items() if k not in skip}
        return {"$obj": f"{cls.__module__.removeprefix(_MODULE_PREFIX)}.{cls.__name__}", "$id": memo[id(value)],
                "$attrs": _encode(attrs, memo)}
    raise StateCodecError(f"cannot encode a {cls.__module__}.{cls.__name__} in a BFCL state")


def _decode(value: Any, memo: dict[int, Any]) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_decode(v, memo) for v in value]
    if not isinstance(value, dict):
        raise StateCodecError(f"unexpected {type(value).__name__} in a BFCL state")
    tag = next((t for t in _TAGS if t in value), None)
    if tag is None:
        order = value.get("$order")
        keys = order if isinstance(order, list) else [k for k in value if k != "$order"]
        return {k: _decode(value[k], memo) for k in keys}
    body = value[tag]
    if tag == "$tuple":
        return tuple(_decode(v, memo) for v in body)
    if tag == "$set":
        return {_hashable(_decode(v, memo)) for v in body}
    if tag == "$items":
        return {_hashable(_decode(k, memo)): _decode(v, memo) for k, v in body}
    if tag == "$random":
        rng = random.Random()
        rng.setstate((body[0], tuple(body[1]), body[2]))
        return rng
    if tag == "$datetime":
        return datetime.datetime.fromisoformat(body)
    if tag == "$ref":
        if body not in memo:
            raise StateCodecError(f"reference to unknown object {body!r} in a BFCL state")
        return memo[body]
    cls = _allowed(str(body))
    obj = cls.__new__(cls)
    memo[int(value["$id"])] = obj  # before the attributes: a child may refer back to its parent
    attrs = _decode(value.get("$attrs", {}), memo)
    for name in _VOLATILE.get(cls.__name__, ()):
        attrs.setdefault(name, _FIXED_TIME)
    obj.__dict__.update(attrs)
    return obj


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        raise StateCodecError("a set member or dict key in a BFCL state must be hashable")
    return value


def _sort_key(encoded: Any) -> str:
    return json.dumps(encoded, sort_keys=True, ensure_ascii=False)


# --- the digest BFCL's state check agrees with ------------------------------------------------


def public_state(instance: Any) -> dict[str, Any]:
    """What ``_compare_instances`` compares: the attributes not starting with ``_``."""
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}


def state_digest(instance: Any) -> str:
    """sha256 (16 hex digits) of the class name and the public state in an ``==``-canonical form
    (the class name keeps two classes' digests apart, so one assertion can name several)."""
    canonical = {"class": type(instance).__name__, "state": _equality_form(public_state(instance), set())}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _equality_form(value: Any, active: set[int]) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value  # 3.0 == 3 in BFCL's comparison
    if isinstance(value, list):
        return [_equality_form(v, active) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [_equality_form(v, active) for v in value]}  # (1,) != [1]
    if isinstance(value, (set, frozenset)):
        return {"$set": sorted((_equality_form(v, active) for v in value), key=_sort_key)}
    if isinstance(value, dict):
        pairs = [[_equality_form(k, active), _equality_form(v, active)] for k, v in value.items()]
        return {"$dict": sorted(pairs, key=lambda p: _sort_key(p[0]))}  # dict equality ignores order
    cls = type(value)
    fields = _EQ_FIELDS.get(cls.__name__)
    if fields is None or not cls.__module__.startswith(_MODULE_PREFIX):
        raise StateCodecError(f"no equality form for a {cls.__module__}.{cls.__name__} in a BFCL state")
    if id(value) in active:
        raise StateCodecError(f"a cycle through {cls.__name__} in the compared state")
    active.add(id(value))
    out = {"$obj": cls.__name__, **{f: _equality_form(getattr(value, f), active) for f in fields}}
    active.discard(id(value))
    return out
