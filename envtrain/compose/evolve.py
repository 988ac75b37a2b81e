"""Rollouts and self-evolution (LegoEnv §3.5): teacher attempts, yield, diagnosis of zero-yield
environments, and an issue log against the atom (or the builder, or the pool) at fault.

The teacher sits behind a small interface: ``Teacher.attempts(env, n) -> [Attempt]``. ``ReplayTeacher``
replays π (a fixture, never a model result); ``RolloutTeacher`` runs any policy spec of
``envtrain.agent.registry.make_policy`` through the rollout engine (teacher.py, over
``envtrain.rollout.collect``). Diagnosis is programmatic first: it names one of the paper's categories
and pathways, with the evidence a repair needs:

- verifier fault → revise the builder: V+ demands a value no stated text or world value gives;
- world fault → repair the atom: a server lacks the tool the intent or π needs, or no tool writes
  what V+ asserts on;
- world fault → supplement the pool: the server's capability card has no tool for the intent's kind;
- hard → keep unchanged: the environment is sound and the teacher still fails.

"Hard" is what is left when no check finds a fault, so it is undecided rather than proven; where an
endpoint is configured, the LLM diagnosis agent (llm_diagnosis.py) reads those environments and may
name a fault the checks cannot see (a misleading tool description, a verifier kind read two ways).
Each diagnosis says which of the two made it (``source``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from envtrain.core.env import Environment
from envtrain.core.io import atomic_write_text
from envtrain.compose.guard import unstated_values


class Attempt(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    passed: bool
    failed: tuple[str, ...] = ()  # names of the assertions that did not hold
    errors: tuple[str, ...] = ()  # tool error messages the agent saw
    calls: tuple[str, ...] = ()  # the tool calls made, in short form (short_call), for a diagnosis agent to read
    stop: str = ""  # why the episode ended (the rollout engine's stop reason: done, turn_limit, ...)


def short_call(tool: str, arguments: Any, limit: int = 160) -> str:
    """``tool({"arg": ...})`` cut to ``limit`` characters: a trajectory in a form a prompt can hold."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True, default=str)
    text = f"{tool}({args})"
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Teacher(Protocol):
    name: str

    def attempts(self, env: Environment, n: int) -> list[Attempt]: ...


class ReplayTeacher:
    """Replays π (optionally without some steps): a fixture for tests and smoke runs."""

    name = "replay"

    def __init__(self, skip: Iterable[int] = ()) -> None:
        self.skip = set(skip)

    def attempts(self, env: Environment, n: int) -> list[Attempt]:
        from envtrain.core.errors import SpecError
        from envtrain.core.session import Runtime

        try:
            runtime = Runtime(env)
        except SpecError as exc:  # the environment cannot even start: every attempt fails the same way
            return [Attempt(passed=False, errors=(str(exc),))] * n
        with runtime.session() as session:
            session.reset()
            errors, calls = [], []
            for i, call in enumerate(env.reference_solution):
                if i not in self.skip:
                    calls.append(short_call(call.tool, call.arguments))
                    result = session.step({"tool": call.tool, "arguments": call.arguments})
                    if not result.ok:
                        errors.append(result.message)
            verdict = session.verify()
        attempt = Attempt(passed=verdict.passed, failed=tuple(a.name for a in verdict.assertions if not a.holds), errors=tuple(errors),
                          calls=tuple(calls))
        return [attempt] * n


class RolloutTeacher:
    """A policy spec (oracle, noop, hf:PATH, openai:URL, vllm:MODEL), N episodes per environment through
    the rollout engine; each call runs one collection in a scratch folder (teacher.py), loading the policy
    anew, so for many environments use the run's teacher step (one collection over OUT/envs) instead."""

    def __init__(self, spec: str, settings: Any = None) -> None:
        from envtrain.compose.teacher import TeacherSettings

        self.spec = spec
        self.settings = settings or TeacherSettings()
        self.name = spec

    def attempts(self, env: Environment, n: int) -> list[Attempt]:
        import tempfile

        from envtrain.compose.teacher import attempts_of, run_teacher

        with tempfile.TemporaryDirectory(prefix="envtrain-teacher-") as tmp:
            envs = Path(tmp) / "envs"
            envs.mkdir()
            (envs / f"{env.id}.json").write_text(env.model_dump_json(), encoding="utf-8")
            settings = self.settings.model_copy(update={"attempts": n})
            results = run_teacher(envs, Path(tmp) / "teacher", self.spec, settings)
            return attempts_of(Path(tmp) / "teacher", {env.id}).get(env.id, []) if env.id in results else []


Category = Literal["verifier fault", "world fault", "hard"]
Pathway = Literal["repair atom", "revise builder", "supplement pool", "keep hard"]
Source = Literal["programmatic", "llm"]


class Diagnosis(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    env_id: str
    category: Category
    pathway: Pathway
    target: str  # "server:<app>@<spec hash>", "builder", or "pool:<what is missing>"
    reason: str
    evidence: dict[str, str] = Field(default_factory=dict)  # what a repair needs: missing_tool, unwritten, faulty_tool, kind
    source: Source = "programmatic"  # who diagnosed it: the checks below, or the LLM diagnosis agent


def diagnose(env: Environment, attempts: list[Attempt], stated: Iterable[str] | None = None) -> Diagnosis:
    """Why an environment yields nothing, programmatic checks first (LegoEnv §3.5, App. K)."""
    stated = list(stated) if stated is not None else _stated(env)
    faults = unstated_values(env, stated)
    if faults:
        return Diagnosis(env_id=env.id, category="verifier fault", pathway="revise builder", target="builder",
                         reason=f"V+ demands a value nothing states: {faults[0]}")
    settings = env.provenance.settings
    host, kind = settings.get("host"), settings.get("action")
    offered = {t.name: app for app in env.apps for t in app.tools}
    missing = [c.tool for c in env.reference_solution if c.tool not in offered]
    if missing:
        app = _app(env, host) or env.apps[0]
        if kind and kind not in app.capabilities:
            return Diagnosis(env_id=env.id, category="world fault", pathway="supplement pool", target=f"pool:{kind} on {app.name}",
                             reason=f"no tool of {app.name} implements {kind!r}: the pool needs a server (or a tool) for it")
        return Diagnosis(env_id=env.id, category="world fault", pathway="repair atom", target=_server(app),
                         reason=f"{app.name} lacks the tool {missing[0]!r} the {kind or 'intent'} write needs",
                         evidence={"missing_tool": missing[0], **({"kind": kind} if kind else {})})
    written = {e.entity if "." in e.entity else f"{app.name}.{e.entity}" for app in env.apps for t in app.tools for e in t.effects}
    written |= {"files"} if any(t.handler for app in env.apps for t in app.tools if t.writes) else set()
    for assertion in env.verifier.positive:
        if assertion.entity not in written:
            app = _app(env, assertion.entity.split(".")[0]) or env.apps[0]
            return Diagnosis(env_id=env.id, category="world fault", pathway="repair atom", target=_server(app),
                             reason=f"no tool writes {assertion.entity}, which V+ '{assertion.name}' asserts on",
                             evidence={"unwritten": assertion.entity})
    errors = [e for a in attempts for e in a.errors if "internal" in e.lower() or "500" in e]
    if errors and len(errors) >= len(attempts):
        app = _app(env, host) or env.apps[0]
        return Diagnosis(env_id=env.id, category="world fault", pathway="repair atom", target=_server(app),
                         reason=f"every attempt met an environment error: {errors[0][:120]}")
    return Diagnosis(env_id=env.id, category="hard", pathway="keep hard", target="none",
                     reason="the environment is sound and admitted; the teacher fails it: kept as a hard task")


def _app(env: Environment, name: str | None):
    return next((a for a in env.apps if a.name == name), None)


def _server(app: Any) -> str:
    from envtrain.compose.atoms import spec_hash

    return f"server:{app.name}@{spec_hash(app)}"


def _stated(env: Environment) -> list[str]:
    """Without the builder's record: the request, the persona and every text of W0 stand for what is stated."""
    texts = [env.request, *map(str, env.persona.values()), *(d.body for d in env.docs), *env.world.files.values()]
    for rows in env.world.tables.values():
        texts.extend(str(v) for row in rows for v in row.values() if isinstance(v, str))
    return texts


class IssueLog:
    """Repairs recorded against what is at fault (an atom, the builder, the pool), as one JSON file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def read(self) -> list[dict[str, Any]]:
        return json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else []

    def record(self, diagnoses: Iterable[Diagnosis]) -> list[dict[str, Any]]:
        """Add diagnoses that call for a change; one issue per (target, pathway, reason), listing its environments."""
        issues = {(i["target"], i["pathway"], i["reason"]): i for i in self.read()}
        for d in diagnoses:
            if d.pathway == "keep hard":
                continue
            issue = issues.setdefault((d.target, d.pathway, d.reason), {
                "target": d.target, "pathway": d.pathway, "category": d.category, "reason": d.reason, "source": d.source,
                "envs": [], "status": "open"})
            if d.env_id not in issue["envs"]:
                issue["envs"].append(d.env_id)
        out = sorted(issues.values(), key=lambda i: (i["target"], i["reason"]))
        atomic_write_text(self.path, json.dumps(out, indent=1) + "\n")
        return out

    def resolve(self, target: str, repair_id: str, fix: str) -> None:
        """Mark the open atom issues against ``target`` repaired by ``repair_id``."""
        issues = self.read()
        for issue in issues:
            if issue["target"] == target and issue["pathway"] == "repair atom" and issue["status"] == "open":
                issue.update(status="repaired", repair=repair_id, fix=fix)
        atomic_write_text(self.path, json.dumps(issues, indent=1) + "\n")


def evolve_round(envs: list[Environment], teacher: Teacher, *, n: int = 8, log: IssueLog | None = None,
                 stated: dict[str, list[str]] | None = None, agent: Any = None) -> dict[str, Any]:
    """One round: N attempts per environment, the yield, and a diagnosis of every zero-yield one
    (programmatic first; ``agent``, an ``llm_diagnosis.DiagnosisAgent``, reads what the checks leave hard)."""
    from envtrain.compose.llm_diagnosis import Case, diagnose_first

    solved, diagnoses = 0, []
    for env in envs:
        attempts = teacher.attempts(env, n)
        if any(a.passed for a in attempts):
            solved += 1
            continue
        found, _ = diagnose_first(Case.of(env, attempts), agent, (stated or {}).get(env.id))
        diagnoses.append(found)
    if log is not None:
        log.record(diagnoses)
    counts: dict[str, int] = {}
    for d in diagnoses:
        counts[d.pathway] = counts.get(d.pathway, 0) + 1
    sources = {s: sum(d.source == s for d in diagnoses) for s in dict.fromkeys(d.source for d in diagnoses)}
    return {"teacher": teacher.name, "attempts": n, "environments": len(envs), "solved": solved,
            "yield": solved / len(envs) if envs else 0.0, "pathways": counts, "sources": sources,
            "diagnoses": [d.model_dump() for d in diagnoses]}
