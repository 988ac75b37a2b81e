"""Rollouts and self-evolution (LegoEnv §3.5): teacher attempts, yield, diagnosis of zero-yield
environments, and an issue log against the atom (or the builder, or the pool) at fault.

The teacher sits behind a small interface: ``Teacher.attempts(env, n) -> [Attempt]``. ``ReplayTeacher``
replays π (a fixture, never a model result); ``RolloutTeacher`` runs any policy of the rollout layer
(envtrain.rollout.episode.run_episode). Diagnosis is programmatic (an LLM diagnosis agent is not
wired in): it names one of the paper's categories and pathways:

- verifier fault → revise the builder: V+ demands a value no stated text or world value gives;
- world fault → repair the atom: a server lacks the tool the intent or π needs, or no tool writes
  what V+ asserts on;
- world fault → supplement the pool: the server's capability card has no tool for the intent's kind;
- hard → keep unchanged: the environment is sound and the teacher still fails.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Iterable, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from envtrain.core.env import Environment
from envtrain.core.io import atomic_write_text, content_hash
from envtrain.compose.guard import unstated_values


class Attempt(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    passed: bool
    failed: tuple[str, ...] = ()  # names of the assertions that did not hold
    errors: tuple[str, ...] = ()  # tool error messages the agent saw


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
            errors = []
            for i, call in enumerate(env.reference_solution):
                if i not in self.skip:
                    result = session.step({"tool": call.tool, "arguments": call.arguments})
                    if not result.ok:
                        errors.append(result.message)
            verdict = session.verify()
        attempt = Attempt(passed=verdict.passed, failed=tuple(a.name for a in verdict.assertions if not a.holds), errors=tuple(errors))
        return [attempt] * n


class RolloutTeacher:
    """Any policy of the rollout layer, N episodes per environment."""

    def __init__(self, policy: Any, params: Any, limits: Any = None) -> None:
        self.policy, self.params, self.limits = policy, params, limits
        self.name = getattr(policy, "name", "policy")

    def attempts(self, env: Environment, n: int) -> list[Attempt]:
        from envtrain.core.session import Runtime
        from envtrain.rollout.episode import RolloutLimits, run_episode

        runtime = Runtime(env)
        limits = self.limits or RolloutLimits()

        async def episodes() -> list[Any]:
            return [await run_episode(runtime, self.policy, self.params, limits, attempt=i) for i in range(n)]

        out = []
        for traj in asyncio.run(episodes()):
            failed = tuple(a.get("name", "") for a in traj.assertions if not a.get("holds"))
            errors = tuple(m.get("content", "") for m in traj.messages if m.get("role") == "tool" and '"error"' in str(m.get("content")))
            out.append(Attempt(passed=traj.passed, failed=failed, errors=errors))
        return out


Category = Literal["verifier fault", "world fault", "hard"]
Pathway = Literal["repair atom", "revise builder", "supplement pool", "keep hard"]


class Diagnosis(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    env_id: str
    category: Category
    pathway: Pathway
    target: str  # "server:<app>@<spec hash>", "builder", or "pool:<what is missing>"
    reason: str


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
                         reason=f"{app.name} lacks the tool {missing[0]!r} the {kind or 'intent'} write needs")
    written = {e.entity if "." in e.entity else f"{app.name}.{e.entity}" for app in env.apps for t in app.tools for e in t.effects}
    written |= {"files"} if any(t.handler for app in env.apps for t in app.tools if t.writes) else set()
    for assertion in env.verifier.positive:
        if assertion.entity not in written:
            app = _app(env, assertion.entity.split(".")[0]) or env.apps[0]
            return Diagnosis(env_id=env.id, category="world fault", pathway="repair atom", target=_server(app),
                             reason=f"no tool writes {assertion.entity}, which V+ '{assertion.name}' asserts on")
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
    return f"server:{app.name}@{content_hash(app.model_dump(mode='json'))}"


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
                "target": d.target, "pathway": d.pathway, "category": d.category, "reason": d.reason, "envs": [], "status": "open"})
            if d.env_id not in issue["envs"]:
                issue["envs"].append(d.env_id)
        out = sorted(issues.values(), key=lambda i: (i["target"], i["reason"]))
        atomic_write_text(self.path, json.dumps(out, indent=1) + "\n")
        return out


def evolve_round(envs: list[Environment], teacher: Teacher, *, n: int = 8, log: IssueLog | None = None,
                 stated: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """One round: N attempts per environment, the yield, and a diagnosis of every zero-yield one."""
    solved, diagnoses = 0, []
    for env in envs:
        attempts = teacher.attempts(env, n)
        if any(a.passed for a in attempts):
            solved += 1
            continue
        diagnoses.append(diagnose(env, attempts, (stated or {}).get(env.id)))
    if log is not None:
        log.record(diagnoses)
    counts: dict[str, int] = {}
    for d in diagnoses:
        counts[d.pathway] = counts.get(d.pathway, 0) + 1
    return {"teacher": teacher.name, "attempts": n, "environments": len(envs), "solved": solved,
            "yield": solved / len(envs) if envs else 0.0, "pathways": counts, "diagnoses": [d.model_dump() for d in diagnoses]}
