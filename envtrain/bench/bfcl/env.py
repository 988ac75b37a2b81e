"""BFCL multi-turn tasks as envtrain environments, so compose's teacher and scale's operators can use them.

One environment per entry:

- **app** ``bfcl``: one tool per function doc of the entry's API classes (held-out miss_func docs
  included: one request has no later turn to add them in), each a Python handler over BFCL's own
  class (``bfcl.<Class>.<method>``, registered by ``bfcl_handlers()``, passed to ``Runtime`` as
  ``handlers=``). Entities: ``state`` (one row per stateful class: the whole instance as JSON,
  see ``codec``, and the digest of its public state) and ``calls`` (every call with the text
  BFCL's executor would have returned: the observation log the response check reads).
- **world W0**: each class after BFCL's ``_load_scenario`` on the entry's initial config.
- **request**: the user turns in order, numbered.
- **verifier**: BFCL's state check, one V+ per class the gold changes (its digest equals the
  gold-replay digest, with the classes the gold leaves alone required unchanged in the same
  assertion; a V- of their own can need two calls to break, log in then post, beyond
  admission's one-call search), or one V- "every state unchanged" when the gold changes none;
  and BFCL's response check, one V+ per distinct gold result, observed at least as often as
  the gold observes it.
- **reference solution**: the gold calls of all turns, in order.

What does not carry over, because one request has no turn boundaries: BFCL checks state and
responses after every user turn, this form after the last, so a call made one turn early, or a
wrong intermediate state that a later call undoes, passes here and fails there; miss_func and
miss_param's "do not act yet" turns become part of one request. And BFCL accepts a gold result
produced by any call in the turn or before it, once; this form asks for each result as often as
the gold produces it (a repeated ``get_ticket`` that BFCL lets ``create_ticket``'s identical
output stand in for). On all 800 entries: agreement on the gold and on dropped, repeated and
swapped calls is exact, 793/800 on a changed argument (``benchmarks/eval_grading.py --all``).

Scaling (``envtrain scale``) transforms these through envtrain's tool gates, its addition beyond
RES's 17 operators (``envtrain.scale.operators.gating``). RES moves the records that read tools
reveal behind new access paths and removes those tools, the verifier unchanged. Here the result
text of every gold call is itself asserted (the response check), so no tool the gold calls may go
or answer differently, and all state the gold reads is reached only through such tools; declaring
which entities a handler reads, or copying BFCL state into tables, would add a second path beside
one that cannot be closed (a bypass) or expose whole instances, private attributes included. So
scaling changes *when actions become available* (RES §3.2): a gated tool keeps its arguments,
effects and results but refuses, naming the missing preparation, until a public preparation has
run (enable it, load its manifest, or run every step of its setup), and preparations compose
through the same token bindings as view layers. The protected contract hashes the tools without
the gates; the bypass check calls each gated tool unprepared with its gold arguments and expects
the refusal; the restoration steps at the head of the reference solution open the gates the gold
uses. A refused call is rolled back, so it never reaches the ``calls`` log the verifier reads.
"""

from __future__ import annotations

import json
from collections import Counter
from importlib.metadata import PackageNotFoundError, version
from types import MappingProxyType
from typing import Any, Mapping

from envtrain.bench.bfcl.codec import api_class, decode_state, encode_state, state_digest
from envtrain.bench.bfcl.data import BFCLEntry, function_docs, parse_gold, to_openai_tools
from envtrain.bench.bfcl.executor import EpisodeExecutor
from envtrain.core.env import Environment
from envtrain.core.errors import ErrorKind, ToolError
from envtrain.core.runtime import Handler, ToolContext

APP = "bfcl"
STATE = f"{APP}.state"
CALLS = f"{APP}.calls"
HANDLER_PREFIX = f"{APP}."
MULTI_TURN_CLASSES = ("GorillaFileSystem", "MathAPI", "MessageAPI", "TicketAPI", "TradingBot", "TravelAPI", "TwitterAPI", "VehicleControlAPI")
# BFCL's executor refuses these method names before eval (multi_turn_utils); so do the handlers.
_REFUSED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})

_ENTITIES = {
    "state": {
        "description": "BFCL API instances: the whole instance as JSON (private attributes too), and the digest of its public state",
        "primary_key": "class_name",
        "columns": {
            "class_name": {"type": "text", "required": True},
            "state": {"type": "json", "required": True},
            "digest": {"type": "text", "required": True},
        },
    },
    "calls": {
        "description": "every call made, with the text BFCL's executor returns for it",
        "columns": {
            "id": {"type": "integer"},
            "tool": {"type": "text", "required": True},
            "arguments": {"type": "json"},
            "result": {"type": "text", "required": True},
            "result_digest": {"type": "text", "required": True},
        },
    },
}


def _stateless(class_name: str) -> bool:
    from bfcl_eval.constants.executable_backend_config import STATELESS_CLASSES

    return class_name in STATELESS_CLASSES


def result_digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def format_result(value: Any) -> str:
    """The text BFCL's executor makes of a return value (``execute_multi_turn_func_call``)."""
    if type(value) == str:
        return value
    if type(value) == dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def call_method(instance: Any, method: str, args: dict[str, Any]) -> str:
    """Run one call as BFCL's executor does: refused names, exceptions as its error text."""
    try:
        if method in _REFUSED:
            raise Exception(f"Function call {method} is not allowed.")
        return format_result(getattr(instance, method)(**args))
    except Exception as exc:  # BFCL turns every failure into this text, and so the observation
        return f"Error during execution: {exc}"


def _observation(result: str) -> Any:
    # The agent sees a JSON object where BFCL's text is one, the text itself otherwise.
    if result.startswith("{"):
        try:
            value = json.loads(result)
            if isinstance(value, dict):
                return value
        except ValueError:
            pass
    return {"result": result}


def _make_handler(class_name: str, method: str) -> Handler:
    stateless = _stateless(class_name)

    def handler(ctx: ToolContext, args: dict[str, Any]) -> Any:
        conn, schema = ctx.world.conn, ctx.world.schema
        calls = schema.resolve(CALLS).table
        if stateless:
            instance = api_class(class_name)()
        else:
            table = schema.resolve(STATE).table
            row = conn.execute(f'SELECT state FROM "{table}" WHERE class_name = ?', (class_name,)).fetchone()
            if row is None:
                raise ToolError(ErrorKind.NOT_FOUND, f"{class_name} is not part of this environment")
            instance = decode_state(class_name, json.loads(row[0]))
        result = call_method(instance, method, args)
        if not stateless:
            conn.execute(f'UPDATE "{table}" SET state = ?, digest = ? WHERE class_name = ?',
                         (json.dumps(encode_state(instance), sort_keys=True, ensure_ascii=False), state_digest(instance), class_name))
        conn.execute(f'INSERT INTO "{calls}" (tool, arguments, result, result_digest) VALUES (?, ?, ?, ?)',
                     (method, json.dumps(args, sort_keys=True, ensure_ascii=False), result, result_digest(result)))
        return _observation(result)

    return handler


def bfcl_handlers() -> Mapping[str, Handler]:
    """Every BFCL multi-turn method as a handler, plus envtrain's built-in ones: pass to
    ``Runtime(env, handlers=...)`` and ``check_admission(env, handlers=...)``."""
    from envtrain.apps.handlers import builtin_handlers

    out: dict[str, Handler] = dict(builtin_handlers())
    for class_name in MULTI_TURN_CLASSES:
        for doc in function_docs(class_name):
            out[f"{HANDLER_PREFIX}{class_name}.{doc['name']}"] = _make_handler(class_name, doc["name"])
    return MappingProxyType(out)


def method_parameters(classes: list[str]) -> dict[str, list[str]]:
    """Parameter names per method, for naming gold calls' positional arguments."""
    import inspect

    out: dict[str, list[str]] = {}
    for class_name in classes:
        cls = api_class(class_name)
        for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not name.startswith("_"):
                out[name] = [p for p in inspect.signature(fn).parameters if p != "self"]
    return out


_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"), (dict, "object"))


def _json_type(value: Any) -> str:
    return next(name for kind, name in _JSON_TYPES if isinstance(value, kind)) if value is not None else "null"


def _accepts(declared: Any, kind: str) -> bool:
    kinds = declared if isinstance(declared, list) else [declared]
    return kind in kinds or (kind == "integer" and "number" in kinds)


def _widen(parameters: dict[str, Any], gold_args: list[dict[str, Any]]) -> dict[str, Any]:
    """BFCL's executor checks no types, and a few gold calls pass what the doc does not declare
    (close_ticket(ticket_id='ticket_001') for an integer id): such a parameter also accepts the
    gold's type, so the gold runs here as it runs in BFCL."""
    props = parameters.get("properties", {})
    for args in gold_args:
        for name, value in args.items():
            schema = props.get(name)
            if schema is None or "type" not in schema:
                continue
            kind = _json_type(value)
            if not _accepts(schema["type"], kind):
                declared = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
                schema["type"] = declared + [kind]
    return parameters


def _tools(entry: BFCLEntry, solution: list[dict[str, Any]]) -> list[dict[str, Any]]:
    owner: dict[str, str] = {}
    for class_name in entry.involved_classes:  # a later class wins a shared name, as in BFCL's method mapping
        for doc in function_docs(class_name):
            owner[doc["name"]] = class_name
    docs = entry.functions + [d for docs in entry.missed_function.values() for d in docs]
    tools = []
    for tool in to_openai_tools(docs):
        fn = tool["function"]
        tools.append({
            "name": fn["name"], "description": fn["description"], "family": "update",  # every call writes the observation log
            "parameters": _widen(fn["parameters"], [c["arguments"] for c in solution if c["tool"] == fn["name"]]), "handler": f"{HANDLER_PREFIX}{owner[fn['name']]}.{fn['name']}",
        })
    return tools


def _request(entry: BFCLEntry) -> str:
    parts = [" ".join(m["content"] for m in turn if m.get("content")) for turn in entry.question]
    parts = [p for p in parts if p]
    numbered = "\n\n".join(f"{i}. {p}" for i, p in enumerate(parts, 1))
    return f"Please do the following, in order.\n\n{numbered}"


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def bfcl_environment(entry: BFCLEntry) -> Environment:
    """The environment document of one entry; W0 and the verifier come from BFCL's own executor
    replaying the gold calls (each turn as one executor call, as BFCL's checker runs the gold)."""
    with EpisodeExecutor(entry) as executor:
        instances = executor.instances()
        stateful = [c for c in entry.involved_classes if not _stateless(c)]
        rows = [{"class_name": c, "state": encode_state(instances[c]), "digest": state_digest(instances[c])} for c in stateful]
        initial = {r["class_name"]: r["digest"] for r in rows}
        observed: list[tuple[str, str]] = []  # (gold call, result) in order
        for turn in entry.ground_truth:
            observed.extend(zip(turn, executor.execute(turn)))
        final = {c: state_digest(instances[c]) for c in stateful}
    positive, negative = [], []
    changed = [c for c in stateful if final[c] != initial[c]]
    kept = [c for c in stateful if c not in changed]
    for c in changed:
        # Classes the gold leaves alone ride along in each changed class's assertion: a V- of their
        # own may need two calls to break (log in, then post), beyond admission's one-call search.
        digests = [final[c]] + [initial[k] for k in kept]
        also = f" (and {', '.join(kept)} unchanged)" if kept else ""
        positive.append({"name": f"{c} state equals the gold replay's{also}", "entity": STATE,
                         "where": [f"digest in [{', '.join(repr(d) for d in digests)}]"], "count": f"= {len(digests)}"})
    if kept and not changed:  # one V- for all: admission breaks it through whichever class one call can change
        negative.append({"name": f"{', '.join(kept)} state unchanged (the gold changes no state)", "entity": STATE,
                         "where": [f"digest in [{', '.join(repr(initial[k]) for k in kept)}]"], "count": f"= {len(kept)}"})
    # The response check: BFCL requires each gold result among the model's; the whole gold
    # observes a text as often as it repeats in the gold (see the module docstring on turns).
    counts = Counter(result for _, result in observed)
    first_call = {}
    for call, result in observed:
        first_call.setdefault(result, call)
    for result, k in counts.items():
        positive.append({"name": f"observes the result of {_short(first_call[result])}", "entity": CALLS,
                         "where": [f"result_digest = '{result_digest(result)}'"], "count": f">= {k}"})
    params = method_parameters(entry.involved_classes)
    solution = [{"tool": g.name, "arguments": g.arguments} for turn in entry.ground_truth for g in (parse_gold(t, params) for t in turn)]
    try:
        bfcl_version = version("bfcl-eval")
    except PackageNotFoundError:
        bfcl_version = "unknown"
    doc = {
        "apps": [{"name": APP, "description": f"BFCL v4 multi-turn API classes: {', '.join(entry.involved_classes)}",
                  "entities": _ENTITIES, "tools": _tools(entry, solution)}],
        "world": {"tables": {STATE: rows, CALLS: []}},
        "request": _request(entry),
        "verifier": {"positive": positive, "negative": negative},
        "reference_solution": solution,
        "provenance": {"source": "bench:bfcl-multi-turn", "settings": {
            "entry_id": entry.id, "category": entry.category, "bfcl_eval": bfcl_version, "user_turns": len(entry.question)}},
    }
    return Environment.parse(doc, source=f"BFCL {entry.id}")
