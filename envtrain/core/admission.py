"""Admission (LegoEnv §3.4): an environment is admitted only when all five conditions hold.

(1) every V+ assertion fails on W0 and every V− holds there;
(2) every step of π succeeds and every assertion holds after π;
(3) each V+ assertion is falsified by dropping some single write step of π;
(4) each V− assertion is falsified by some reachable world: found by a bounded, seeded search
    over single public tool calls from W0 and from W_π (arguments drawn from the world's own
    values and the assertion's literals), so "reachable" means reachable by an agent;
(5) reset after π gives back W0's hash, and replaying π after the reset reaches the same W_π.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from envtrain.core.condition import Assertion
from envtrain.core.env import Environment
from envtrain.core.args import compile_validator
from envtrain.core.errors import ToolError
from envtrain.core.expr import Lit, walk
from envtrain.core.runtime import CompiledTool, Handler
from envtrain.core.session import Runtime, Session
from envtrain.core.world import image_hash

CONDITIONS = {
    1: "V+ fails and V- holds on W0",
    2: "pi runs and reaches every assertion",
    3: "each V+ needs a write step of pi",
    4: "each V- can be falsified by a reachable world",
    5: "reset restores W0 and pi replays exactly",
}


@dataclass(frozen=True)
class Failure:
    condition: int
    reason: str
    assertion: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"condition": self.condition, "name": CONDITIONS[self.condition], "assertion": self.assertion, "reason": self.reason}


@dataclass(frozen=True)
class AdmissionReport:
    env_id: str
    failures: tuple[Failure, ...]
    seconds: float
    searched_calls: int = 0  # tool calls tried by the condition (4) search

    @property
    def admitted(self) -> bool:
        return not self.failures

    def passed(self, condition: int) -> bool:
        return all(f.condition != condition for f in self.failures)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.env_id,
            "admitted": self.admitted,
            "conditions": {str(n): self.passed(n) for n in CONDITIONS},
            "failed": [f.to_dict() for f in self.failures],
            "seconds": round(self.seconds, 6),
            "searched_calls": self.searched_calls,
        }


@dataclass
class _Check:
    runtime: Runtime
    session: Session
    search_budget: int
    seed: int
    failures: list[Failure] = field(default_factory=list)
    searched: int = 0

    @property
    def labelled(self) -> list[tuple[str, Assertion]]:
        return list(self.runtime.verifier.assertions)

    def holds(self) -> list[bool]:
        """Each assertion's truth on the session's current world, in verifier order."""
        counts = self.runtime.verifier.counts(self.session.world)
        return [a.count.holds(c) for (_, a), c in zip(self.labelled, counts)]

    def replay(self, skip: int | None = None, *, from_current: bool = False) -> list[str]:
        """Reset (unless ``from_current``) and run π without step ``skip``; returns each failed step's error."""
        if not from_current:
            self.session.reset()
        errors = []
        for i, call in enumerate(self.runtime.env.reference_solution):
            if i == skip:
                continue
            # Only the world π reaches matters here, not what its reads show.
            result = self.session.step({"tool": call.tool, "arguments": call.arguments}, observe=False)
            if not result.ok:
                errors.append(f"step {i} ({call.tool}): {result.error.value if result.error else ''}: {result.message}")
        return errors


def check_admission(
    env: Environment,
    *,
    handlers: Mapping[str, Handler] | None = None,
    search_budget: int = 400,
    seed: int = 0,
    runtime: Runtime | None = None,
) -> AdmissionReport:
    """Run conditions (1)–(5); a malformed environment raises SpecError before any runs.

    ``runtime``: the environment already compiled (scale's validation has one), to skip compiling twice.
    """
    start = time.perf_counter()
    if runtime is None:
        runtime = Runtime(env, handlers=handlers)
    elif runtime.env.id != env.id:
        raise ValueError("the runtime given was compiled from a different environment")
    with runtime.session() as session:
        check = _Check(runtime, session, search_budget, seed)
        _run(check)
    return AdmissionReport(env.id, tuple(check.failures), time.perf_counter() - start, check.searched)


def _name(polarity: str, assertion: Assertion) -> str:
    return f"V{polarity} {assertion.name or assertion.describe()}"


def _run(check: _Check) -> None:
    runtime, session, fail = check.runtime, check.session, check.failures.append
    labelled = check.labelled
    if not labelled:
        fail(Failure(1, "the verifier has no assertions"))

    # (1) W0
    session.reset()
    for (polarity, a), holds in zip(labelled, check.holds()):
        if polarity == "+" and holds:
            fail(Failure(1, "already holds on W0: the task would be solved by doing nothing", _name(polarity, a)))
        if polarity == "-" and not holds:
            fail(Failure(1, "does not hold on W0: the world breaks it before the agent acts", _name(polarity, a)))

    # (2) π reaches V
    errors = check.replay()
    for error in errors:
        fail(Failure(2, f"reference solution {error}"))
    counts = runtime.verifier.counts(session.world)
    for (polarity, a), count in zip(labelled, counts):
        if not a.count.holds(count):
            fail(Failure(2, f"does not hold after the reference solution (count {count}, needs {a.count})", _name(polarity, a)))
    pi_image = session.world.image()  # hashed only if the replay below does not reach the same image

    # (3) every V+ depends on some write step
    writes = [i for i, c in enumerate(runtime.env.reference_solution) if runtime.tools[c.tool].tool.writes]
    needed = {i: False for i, (p, _) in enumerate(labelled) if p == "+"}
    session.reset()
    for step in writes:
        if all(needed.values()):
            break
        with session.world.probe():  # back to W0 after each replay, without a new connection
            check.replay(skip=step, from_current=True)
            for i, holds in enumerate(check.holds()):
                if i in needed and not holds:
                    needed[i] = True
    for i, ok in needed.items():
        if not ok:
            reason = ("no write step of the reference solution is needed for it (it still holds with any one dropped)"
                      if writes else "the reference solution has no write step")
            fail(Failure(3, reason, _name(*labelled[i])))

    # (4) every V- can be broken by something an agent can do
    negatives = [i for i, (p, _) in enumerate(labelled) if p == "-"]
    if negatives:
        _falsify_negatives(check, negatives)

    # (5) reset gives back W0, and π replays to the same world
    # Equal database images are equal worlds, so the content hashes are computed only when the images differ.
    check.replay()
    session.reset()
    if session.world.image() != runtime.w0 and session.world.content_hash() != runtime.w0_hash:
        fail(Failure(5, f"reset after the reference solution gives world {session.world.content_hash()}, not W0 {runtime.w0_hash}"))
    check.replay()
    if session.world.image() != pi_image and session.world.content_hash() != image_hash(runtime.schema, pi_image):
        fail(Failure(5, "replaying the reference solution after a reset reaches a different world: some state survives reset"))


def _falsify_negatives(check: _Check, negatives: list[int]) -> None:
    labelled, session = check.labelled, check.session
    open_ = set()
    for i in negatives:
        a = labelled[i][1]
        if a.count.op == ">=" and a.count.n == 0:
            check.failures.append(Failure(4, f"cardinality {a.count} holds for every world", _name(*labelled[i])))
        else:
            open_.add(i)
    start_worlds: list[bytes] = [check.runtime.w0]
    check.replay()
    start_worlds.append(session.world.serialize())
    # Worlds reached by π itself count as reachable.
    holds = check.holds()
    open_ -= {i for i in open_ if not holds[i]}
    rng = random.Random(check.seed)
    pools = _value_pools(check, start_worlds[0])
    current: list[bytes | None] = [None]

    def attempt(world_bytes: bytes, call: dict) -> None:
        if world_bytes is not current[0]:
            session.world.restore(world_bytes)
            current[0] = world_bytes
        check.searched += 1
        with session.world.probe():  # each candidate starts from the same world; no snapshot copy
            if session.step(call, observe=False).ok:
                holds = check.holds()
                open_.difference_update({i for i in open_ if not holds[i]})

    # First, for each negative, calls aimed at it: arguments named like its columns take its literals.
    for i in sorted(open_):
        for world_bytes in start_worlds:
            for call in _aimed_calls(check, labelled[i][1], pools):
                if i not in open_ or check.searched >= check.search_budget:
                    break
                attempt(world_bytes, call)
    # Then a seeded random search over every write tool.
    for world_bytes, call in _candidate_calls(check, [labelled[i][1] for i in open_], start_worlds, rng, pools):
        if not open_ or check.searched >= check.search_budget:
            break
        attempt(world_bytes, call)
    for i in sorted(open_):
        a = labelled[i][1]
        check.failures.append(Failure(
            4, f"no reachable world breaks it: {check.searched} public tool calls from W0 and W_pi left it holding"
               f" (does any tool write {a.entity}?)", _name(*labelled[i])))


def _touches(tool: CompiledTool, entities: set[str]) -> bool:
    if tool.handler is not None:
        return "files" in entities
    return any(e.info.name in entities for e in tool.effects)


def _aimed_calls(check: _Check, target: Assertion, pools: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    """Calls of the tools that write the target's entity, arguments taken from its clauses by name:
    ``card_id`` or ``id`` answers ``cards.id = 45``; each listed value and each enum value gets a try."""
    info = check.runtime.schema.resolve(target.entity)
    short = info.name.split(".")[-1]
    singular = short[:-1] if short.endswith("s") else short
    hints: dict[str, list[Any]] = {}
    for clause in target.where:
        value = clause.value
        if isinstance(value, Lit) and value.value is not None:
            values = list(value.value) if isinstance(value.value, tuple) else [value.value]
            keys = {clause.column, f"{singular}_{clause.column}"}
            ref = info.columns[clause.column].ref if clause.column in info.columns else None
            if ref:  # forwarded_from -> messages.id also answers message_id
                target_name, _, column = ref.rpartition(".")
                short_ref = target_name.split(".")[-1]
                keys.add(f"{short_ref[:-1] if short_ref.endswith('s') else short_ref}_{column}")
            for key in keys:
                hints.setdefault(key, []).extend(values)
    rng = random.Random(check.seed)
    columns = {c.column for c in target.where}
    loose = [v for c in target.where if isinstance(c.value, Lit) and c.value.value is not None
             for v in (c.value.value if isinstance(c.value.value, tuple) else (c.value.value,)) if isinstance(v, str)][:4]

    def rank(tool: CompiledTool) -> int:
        # Changing or removing the rows the assertion reads first, adding rows next.
        best = 2
        for e in tool.effects:
            if e.info.name == target.entity:
                if e.effect.kind == "delete" or (e.effect.kind == "update" and columns & set(e.effect.values)):
                    return 0
                if e.effect.kind != "update":
                    best = 1
        return best

    for tool in sorted(check.runtime.tools.values(), key=rank):
        if not tool.tool.writes or not _touches(tool, {target.entity}):
            continue
        props: dict[str, Any] = tool.tool.parameters.get("properties", {})
        required = set(tool.tool.parameters.get("required", ()))
        base = {}
        for name, schema in props.items():
            if name in hints:
                base[name] = hints[name][0]
            elif name in required:
                base[name] = _guess(name, schema, [], pools, rng, exact=True)
        name_ = tool.tool.name
        yield {"tool": name_, "arguments": base}
        for name, schema in props.items():
            options = list(hints.get(name, [])[1:]) + [v for v in schema.get("enum", []) if v != base.get(name)]
            if "enum" not in schema and name in required:
                # The first value may be a no-op (an assertion's literal is often the current value).
                fits = _fits(name, schema)
                options += [v for v in pools.get(name, [])[:4] if v != base.get(name) and v not in options and fits(v)]
                if name not in hints:  # a literal no parameter is named for may still belong here (a cell's value)
                    options += [v for v in loose if v not in options and v != base.get(name) and fits(v)]
            for option in options:
                yield {"tool": name_, "arguments": {**base, name: option}}


def _candidate_calls(
    check: _Check, targets: list[Assertion], worlds: list[bytes], rng: random.Random, pools: dict[str, list[Any]],
) -> Iterator[tuple[bytes, dict]]:
    """Single write calls, tools touching the targets' entities first, arguments from the world's values."""
    runtime = check.runtime
    entities = {a.entity for a in targets}
    literals: list[Any] = []
    for a in targets:
        for clause in a.where:
            for node in walk(clause):
                if isinstance(node, Lit):
                    literals.extend(node.value if isinstance(node.value, tuple) else [node.value])

    def touches(tool: CompiledTool) -> bool:
        return _touches(tool, entities)

    writers = [t for t in runtime.tools.values() if t.tool.writes]
    writers.sort(key=lambda t: not touches(t))
    for round_ in range(1000):
        calls = []
        for tool in writers:
            if round_ > 0 and not touches(tool) and round_ % 4:
                continue
            calls.append({"tool": tool.tool.name, "arguments": _arguments(tool, literals, pools, rng, exact=round_ == 0)})
        for world in worlds:  # grouped by start world: one restore per world per round
            for call in calls:
                yield world, call


def _value_pools(check: _Check, w0: bytes) -> dict[str, list[Any]]:
    """Distinct values per column name across every table of W0 (capped), for argument guessing."""
    world = check.session.world
    world.restore(w0)
    pools: dict[str, list[Any]] = {}
    for name, info in check.runtime.schema.entities.items():
        for row in world.rows(name, limit=200):
            for column, value in row.items():
                if value is None or isinstance(value, (dict, list)):
                    continue
                bucket = pools.setdefault(column, [])
                if value not in bucket and len(bucket) < 50:
                    bucket.append(value)
                short = name.split(".")[-1].rstrip("s")  # tickets.id answers ticket_id
                if column == info.spec.primary_key:
                    key = pools.setdefault(f"{short}_{column}", [])
                    if value not in key and len(key) < 50:
                        key.append(value)
    return pools


def _arguments(tool: CompiledTool, literals: list[Any], pools: dict[str, list[Any]], rng: random.Random, *, exact: bool) -> dict[str, Any]:
    props: dict[str, Any] = tool.tool.parameters.get("properties", {})
    required = set(tool.tool.parameters.get("required", ()))
    args: dict[str, Any] = {}
    for name, schema in props.items():
        if name not in required and (exact or rng.random() < 0.5):
            continue
        args[name] = _guess(name, schema, literals, pools, rng, exact=exact)
    return args


def _fits(name: str, schema: dict[str, Any]) -> Any:
    """Whether a value satisfies the parameter's own schema (type, length, range): a guess the tool
    would refuse (an empty subject, say) tests nothing."""
    check = compile_validator({"type": "object", "properties": {name: schema}})

    def fits(value: Any) -> bool:
        if value is None:
            return False
        try:
            check({name: value})
        except ToolError:
            return False
        return True
    return fits


def _guess(name: str, schema: dict[str, Any], literals: list[Any], pools: dict[str, list[Any]], rng: random.Random, *, exact: bool) -> Any:
    kind = schema.get("type")
    if "enum" in schema:
        options = list(schema["enum"])
        hinted = [v for v in literals if v in options]
        return hinted[0] if exact and hinted else rng.choice(options)
    fits = _fits(name, schema)
    if kind == "array":
        item = _guess(name, schema.get("items", {}), literals, pools, rng, exact=exact)
        return [item]
    if kind == "object":
        return {}
    named = [v for v in pools.get(name, []) + pools.get(name.removesuffix("_id"), []) if fits(v)]
    hinted = [v for v in literals if fits(v) and v is not None]
    if exact:
        # First round: the assertion's own literals for ids, the world's values otherwise.
        for pool in ((hinted if name.endswith("id") else named), named, hinted):
            if pool:
                return pool[0]
    candidates = hinted + named + [v for pool in pools.values() for v in pool if fits(v)][:200]
    if candidates:
        return rng.choice(candidates)
    return {"integer": 1, "number": 1.0, "boolean": True}.get(kind if isinstance(kind, str) else "", "x")
