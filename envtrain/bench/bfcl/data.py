"""BFCL v4 multi-turn data as it ships in the ``bfcl-eval`` wheel: entries, gold answers, function docs.

Nothing is downloaded: questions, ``possible_answer`` files and the function docs of the eight
multi-turn API classes are package data. Entries are prepared as BFCL's own
``populate_test_cases_with_predefined_functions`` prepares them (function docs of the involved
classes; miss_func's held-out docs moved to ``missed_function``), without importing its
``bfcl_eval.utils`` (which needs tree-sitter and API clients that ``--no-deps`` leaves out).
"""

from __future__ import annotations

import ast
import copy
import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")


class GoldCall(BaseModel):
    """One gold call: BFCL's string form and its arguments by parameter name."""

    model_config = ConfigDict(frozen=True)

    text: str  # as BFCL writes it: "mv(source='a.txt',destination='temp')"
    name: str
    arguments: dict[str, Any]  # positional arguments mapped to parameter names


class BFCLEntry(BaseModel):
    """One multi-turn entry, prepared as BFCL prepares it for inference."""

    model_config = ConfigDict(frozen=True)

    id: str  # "multi_turn_base_0"
    category: str  # one of CATEGORIES
    question: list[list[dict[str, Any]]]  # user messages per turn; a held-out turn is []
    initial_config: dict[str, Any]
    involved_classes: list[str]
    functions: list[dict[str, Any]]  # function docs offered from the start
    missed_function: dict[str, list[dict[str, Any]]]  # turn index (str) -> docs added at that turn
    ground_truth: list[list[str]]  # gold calls per turn, BFCL's strings

    @property
    def long_context(self) -> bool:
        # BFCL decides by the category in the id (multi_turn_checker, base_handler).
        return "long_context" in self.id or "composite" in self.id

    def raw(self) -> dict[str, Any]:
        """The entry as BFCL's checker reads it (a fresh copy: the checker may mutate what it gets)."""
        return {"id": self.id, "question": copy.deepcopy(self.question), "initial_config": copy.deepcopy(self.initial_config),
                "involved_classes": list(self.involved_classes)}


def _data_root() -> Any:
    return resources.files("bfcl_eval") / "data"


def _read_jsonl(path: Any) -> list[dict[str, Any]]:
    # BFCL's ".json" files are JSON Lines.
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _data_file(folder: Any, category: str) -> Any:
    # Found by suffix rather than "BFCL_v4_" so a version bump of the wheel still loads.
    suffix = f"_multi_turn_{category}.json"
    hits = sorted(p for p in folder.iterdir() if p.name.endswith(suffix))
    if not hits:
        raise FileNotFoundError(f"no *{suffix} under {folder} (is bfcl-eval installed?)")
    return hits[-1]


@lru_cache(maxsize=None)  # package data, immutable: parse once per process
def _function_docs(class_name: str) -> tuple[str, ...]:
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    path = _data_root() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    return tuple(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def function_docs(class_name: str) -> list[dict[str, Any]]:
    """The function docs of one API class (fresh dicts: callers may edit them)."""
    return [json.loads(line) for line in _function_docs(class_name)]


def load_entries(category: str) -> list[BFCLEntry]:
    """All entries of one category, in BFCL's order, each with its gold answer."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL multi-turn category {category!r} (categories: {', '.join(CATEGORIES)})")
    root = _data_root()
    questions = _read_jsonl(_data_file(root, category))
    answers = {a["id"]: a["ground_truth"] for a in _read_jsonl(_data_file(root / "possible_answer", category))}
    entries = []
    for q in questions:
        functions = [doc for cls in q["involved_classes"] for doc in function_docs(cls)]
        missed: dict[str, list[dict[str, Any]]] = {}
        for turn, names in q.get("missed_function", {}).items():
            # As BFCL: each held-out doc leaves the initial list and comes back at its turn.
            missed[turn] = []
            for name in names:
                for i, doc in enumerate(functions):
                    if doc["name"] == name:
                        missed[turn].append(functions.pop(i))
                        break
        entries.append(BFCLEntry(
            id=q["id"], category=category, question=q["question"], initial_config=q.get("initial_config", {}),
            involved_classes=q["involved_classes"], functions=functions, missed_function=missed, ground_truth=answers[q["id"]],
        ))
    return entries


def to_openai_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """BFCL function docs as OpenAI tools, as BFCL's ``convert_to_tool`` does for OpenAI completions
    (its module imports tree-sitter, so the few rules are mirrored here): ``dict`` -> ``object``,
    ``float`` -> ``number`` with ``format: float`` and a note in the description, ``tuple`` -> ``array``."""
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    tools = []
    for doc in copy.deepcopy(functions):
        doc["name"] = re.sub(r"\.", "_", doc["name"])
        doc["parameters"]["type"] = "object"
        doc["parameters"]["properties"] = _cast_types(doc["parameters"].get("properties", {}), GORILLA_TO_OPENAPI)
        tools.append({"type": "function", "function": doc})
    return tools


def _cast_types(properties: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    for value in properties.values():
        kind = value.get("type")
        if kind is None:
            value["type"] = "string"
        else:
            if kind == "float":
                value["format"] = "float"
                value["description"] = value.get("description", "") + " This is a float type value."
            value["type"] = mapping.get(kind, "string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast_types(value["properties"], mapping)
            elif "items" in value:
                items = value["items"]
                items["type"] = mapping[items["type"]]
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = mapping[items["items"]["type"]]
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast_types(items["properties"], mapping)
    return properties


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """A structured call in BFCL's executable form, as its ``convert_to_function_call`` writes it."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def parse_gold(text: str, parameters: dict[str, list[str]]) -> GoldCall:
    """Parse a gold call string (literals only, checked on all 4,625 gold calls); positional
    arguments are named by the method's signature, ``parameters[name]``."""
    node = ast.parse(text, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain call: {text!r}")
    name = node.func.id
    args: dict[str, Any] = {}
    names = parameters.get(name, [])
    for i, value in enumerate(node.args):
        if i >= len(names):
            raise ValueError(f"{text!r}: more positional arguments than {name} takes")
        args[names[i]] = _jsonable(ast.literal_eval(value))
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError(f"{text!r}: ** arguments are not supported")
        args[kw.arg] = _jsonable(ast.literal_eval(kw.value))
    return GoldCall(text=text, name=name, arguments=args)


def _jsonable(value: Any) -> Any:
    # A tool call carries JSON: tuples travel as lists (BFCL's own decode from JSON does the same).
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value
