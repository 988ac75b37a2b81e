"""Tasks from tool chains of the built-in apps, without any model.

A chain is ``find → act``: a read/list/search tool that hands the agent a record's key, then a
write tool whose row selector takes that key. From a chain and a seed world (the shipped
examples' W0 for that app): pick a record, fill the write's arguments from the world (an enum
value the record does not hold yet, a value other rows hold), run the chain once in a session,
and read the verifier off what changed: V+ pins the changed columns of the touched record, V−
pins the same columns of two records of the same entity that must stay as they are.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envtrain.core.app import App, Tool
from envtrain.core.condition import Assertion
from envtrain.core.env import Call, Environment, Provenance, Verifier
from envtrain.core.errors import SpecError
from envtrain.core.expr import Clause, Lit
from envtrain.core.session import Runtime
from envtrain.synth.graph import READ_FAMILIES, build_graph, key_params, singular

LABEL_COLUMNS = ("name", "title", "subject", "summary", "sku", "email", "number", "label")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@dataclass(frozen=True)
class Chain:
    app: str
    find: str  # the tool that hands over the key
    act: str  # the write tool that takes it
    param: str  # the act's key parameter
    entity: str


def seed_worlds(examples: Path = EXAMPLES) -> dict[str, Environment]:
    """Built-in app name → an example environment of that app alone (its W0 is the seed world)."""
    out: dict[str, Environment] = {}
    for path in sorted(examples.glob("*.yaml")):
        try:
            env = Environment.load(path)
        except SpecError:
            continue
        if len(env.apps) == 1 and env.apps[0].entities:
            out.setdefault(env.apps[0].name, env)
    return out


def chains(app: App) -> list[Chain]:
    graph = build_graph(app)
    tools = {t.name: t for t in app.tools}
    out = []
    for act in app.tools:
        for param, entity in key_params(app, act):
            for edge in graph.feeding(act.name):
                if edge.param == param and edge.entity == entity and tools[edge.source].family in READ_FAMILIES:
                    out.append(Chain(app.name, edge.source, act.name, param, entity))
    return out


def sample_task(seed_env: Environment, chain: Chain, rng: random.Random) -> Environment | str:
    """One environment from the chain, or why this draw does not make a task (the caller redraws)."""
    app = seed_env.apps[0]
    tools = {t.name: t for t in app.tools}
    act, find = tools[chain.act], tools[chain.find]
    spec = app.entities[chain.entity]
    qualified = f"{app.name}.{chain.entity}"
    rows = seed_env.world.tables.get(qualified) or seed_env.world.tables.get(chain.entity) or []
    if len(rows) < 2:
        return f"{qualified}: fewer than two records in the seed world"
    row = rng.choice(rows)
    key = row.get(spec.primary_key)
    args = _arguments(app, act, chain, row, rows, key, rng)
    if args is None:
        return f"{act.name}: no value for a required argument"
    label_col = next((c for c in LABEL_COLUMNS if c in spec.columns and isinstance(row.get(c), str)
                      and sum(r.get(c) == row[c] for r in rows) == 1), None)
    find_args = _find_arguments(find, row, label_col, chain.entity, spec.primary_key)
    if find_args is None:
        return f"{find.name}: a required argument has no value in the record"
    calls = (Call(tool=find.name, arguments=find_args), Call(tool=act.name, arguments=args))
    draft = seed_env.model_copy(update={"id": "", "request": "draft", "reference_solution": calls,
                                        "verifier": Verifier(positive=(Assertion(entity=qualified, count="exists"),))})
    draft = Environment.parse(draft.model_dump(mode="json", exclude={"id"}))
    runtime = Runtime(draft)
    with runtime.session() as session:
        session.reset()
        before = {r[spec.primary_key]: r for r in session.world.rows(qualified)}
        for call in calls:
            step = session.step(call.model_dump())
            if not step.ok:
                return f"{call.tool} refused: {step.message}"
        after = {r[spec.primary_key]: r for r in session.world.rows(qualified)}
    verifier = _verifier(app, chain, spec.primary_key, before, after, key, rng)
    if verifier is None:
        return f"{act.name}: changed no column a verifier can pin"
    what = f'the {singular(chain.entity).replace("_", " ")} "{row[label_col]}"' if label_col else f"{singular(chain.entity).replace('_', ' ')} {key}"
    details = ", ".join(f"{k.replace('_', ' ')} {v!r}" for k, v in args.items() if k != chain.param)
    request = (f"Find {what} (you can look it up with {find.name}) and {act.description.rstrip('.').lower()[:1]}"
               f"{act.description.rstrip('.')[1:]}{' with ' + details if details else ''}. Leave the other records as they are.")
    return Environment.parse({
        **draft.model_dump(mode="json", exclude={"id", "verifier", "request", "provenance"}),
        "request": request, "verifier": verifier.model_dump(mode="json"),
        "provenance": Provenance(source="synth", settings={"kind": "chain", "app": app.name, "chain": [find.name, act.name],
                                                           "param": chain.param, "seed_env": seed_env.id}).model_dump(mode="json"),
    })


def _arguments(app: App, act: Tool, chain: Chain, row: dict, rows: list[dict], key: Any, rng: random.Random) -> dict[str, Any] | None:
    props: dict[str, Any] = act.parameters.get("properties", {})
    required = set(act.parameters.get("required", ()))
    args: dict[str, Any] = {chain.param: key}
    columns = app.entities[chain.entity].columns
    for name, schema in props.items():
        if name == chain.param or (name not in required and rng.random() < 0.7):
            continue
        current = row.get(name)
        if "enum" in schema:
            options = [v for v in schema["enum"] if v != current]
        elif name in columns and columns[name].enum:
            options = [v for v in columns[name].enum if v != current]
        else:
            options = [r.get(name) for r in rows if r.get(name) not in (None, current)]
            options = [v for v in options if _fits(v, schema) and not isinstance(v, (list, dict))] or _invented(name, schema, rng)
        if not options:
            if name in required:
                return None
            continue
        args[name] = rng.choice(sorted(set(options), key=repr))
    return args


def _invented(name: str, schema: dict[str, Any], rng: random.Random) -> list[Any]:
    """A value for a parameter no record holds (a reason, a note, a flag): plain, readable, seeded."""
    kind = schema.get("type")
    if kind == "string" and "format" not in schema:
        return [f"{name.replace('_', ' ')} per request {rng.randrange(100, 1000)}"]
    if kind == "boolean":
        return [True]
    if kind in ("integer", "number"):
        low = schema.get("minimum", 1)
        return [int(low) + rng.randrange(1, 5)]
    return []


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return {"string": isinstance(value, str), "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool), "boolean": isinstance(value, bool)}.get(kind, True)


def _find_arguments(find: Tool, row: dict, label_col: str | None, entity: str, pk: str) -> dict[str, Any] | None:
    props = find.parameters.get("properties", {})
    required = find.parameters.get("required", ())
    args: dict[str, Any] = {}
    if "query" in props and label_col:
        args["query"] = row[label_col]
    for name in required:
        if name in args:
            continue
        if name in (f"{singular(entity)}_{pk}", pk):
            args[name] = row[pk]
        elif name in row:
            args[name] = row[name]
        else:
            return None
    return args


def _verifier(app: App, chain: Chain, pk: str, before: dict, after: dict, key: Any, rng: random.Random) -> Verifier | None:
    columns = app.entities[chain.entity].columns
    qualified = f"{app.name}.{chain.entity}"
    if key not in after:  # deleted
        positive = [Assertion(name=f"{chain.entity} {key} removed", entity=qualified, where=(Clause(pk, "=", Lit(key)),), count="not exists")]
        changed: list[str] = []
    else:
        changed = [c for c in columns if c != pk and columns[c].type not in ("datetime", "json")
                   and after[key].get(c) != before[key].get(c) and after[key].get(c) is not None]
        if not changed:
            return None
        positive = [Assertion(name=f"{singular(chain.entity)} {key}: {', '.join(changed)} set", entity=qualified,
                              where=(Clause(pk, "=", Lit(key)), *(Clause(c, "=", Lit(after[key][c])) for c in changed)), count="= 1")]
    watched = changed or [c for c in columns if c != pk and columns[c].type not in ("datetime", "json")][:1]
    others = [k for k in before if k != key and k in after and after[k] == before[k]]
    negative = []
    for other in rng.sample(others, min(2, len(others))):
        clauses = [Clause(pk, "=", Lit(other))] + [Clause(c, "=", Lit(before[other][c])) if before[other].get(c) is not None
                                                   else Clause(c, "is null", None) for c in watched]
        negative.append(Assertion(name=f"{singular(chain.entity)} {other} untouched", entity=qualified, where=tuple(clauses), count="= 1"))
    return Verifier(positive=tuple(positive), negative=tuple(negative))
