"""The LLM diagnosis agent (LegoEnv §3.5; its brief is the paper's App. J, Figure 9): where an endpoint is
configured, a model reads a zero-yield environment that the programmatic checks (evolve.py) leave
undecided, and names the fault and the pathway.

Programmatic checks run first and, when they find a fault, decide: the model is asked only about the
environments they call "hard", i.e. sound as far as the checks can tell. The model reads what the paper's
agent reads (E, π and the failed trajectories): the request, the rule text in its carrier, W0 in short,
the verifier's assertions, the reference solution, the teacher's failed attempts in short form, the
atoms involved (server atoms with every tool and its parameters), and what the checks found. It answers
one JSON object, validated against ``Verdict``:

    {"verdict": "verifier_fault" | "world_fault" | "hard_task",
     "pathway": "repair_atom" | "revise_builder" | "supplement_pool" | "keep_hard",
     "atom": "<an atom id or hash listed in the prompt>" | null,
     "reason": "...",
     "repair": {"missing_tool": T} | {"unwritten": "app.entity"} | {"faulty_tool": T}   (repair_atom only)}

and then against the case: the pathway must fit the verdict, the atom must be one of the environment's,
and a ``repair_atom`` verdict must name evidence from which the programmatic repairer
(``repairs.derive_repair``) derives a patch from the server's reference spec; the model never writes the
patch itself. A refused answer goes back with the reason, up to ``budget`` answers; after that (or when
the endpoint fails) the programmatic diagnosis stands and the exchange records why.

The accepted verdict is kept with the manifest entry, so a rerun of the same run replays it without
asking again (as the LLM builder does with its requests).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from envtrain.agent.chat import ChatClient, EndpointError, json_object
from envtrain.compose.evolve import Attempt, Diagnosis, diagnose, short_call
from envtrain.compose.repairs import EVIDENCE, derive_repair
from envtrain.core.env import Environment, format_validation_error

CATEGORIES = {"verifier_fault": "verifier fault", "world_fault": "world fault", "hard_task": "hard"}
FITTING = {  # the pathways each verdict may take (LegoEnv §3.5, App. K)
    "verifier_fault": ("revise_builder",),
    "world_fault": ("repair_atom", "supplement_pool", "revise_builder"),
    "hard_task": ("keep_hard",),
}
MAX_ROWS, MAX_CALLS, MAX_ATTEMPTS, MAX_TEXT = 3, 40, 3, 300  # how much of W0, π and the attempts the prompt shows

SYSTEM = (
    "You diagnose task environments for tool-using assistants. An environment has a request, a policy (the rule) written "
    "in one place of the world, an initial world W0, a verifier (V+: what must be written; V-: what must stay untouched), "
    "and a reference solution that passes the verifier. A teacher assistant attempted the task several times and never "
    "passed. Automatic checks found no fault. Decide why the teacher fails:\n"
    "- verifier_fault: the verifier demands something neither the request nor the rule nor the world states, or reads a "
    "check two ways. Pathway: revise_builder.\n"
    "- world_fault: a record, column or tool the task needs is missing, inconsistent or misleading. Pathway: repair_atom "
    "when a server atom's tool is missing or wrong (its description, parameters or effect): the repair restores that tool "
    "from the server's reference specification, so say which tool; supplement_pool when the pool lacks a capability; "
    "revise_builder when the builder seeded an inconsistent world.\n"
    "- hard_task: the environment is sound and the teacher simply failed. Pathway: keep_hard.\n"
    "Prefer hard_task unless the evidence shows a fault. Answer with one JSON object and nothing else:\n"
    '{"verdict": "verifier_fault|world_fault|hard_task", "pathway": "repair_atom|revise_builder|supplement_pool|keep_hard", '
    '"atom": "<an atom id or hash from the list>" or null, "reason": "<the evidence, one or two sentences>", '
    '"repair": {"missing_tool": "<tool>"} or {"unwritten": "<app.entity>"} or {"faulty_tool": "<tool>"} (only with repair_atom)}'
)


class RepairEvidence(BaseModel):
    """What a repair_atom verdict points at: exactly one of the forms ``derive_repair`` can act on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    missing_tool: str | None = Field(None, min_length=1, description="a tool the server lacks and the task needs")
    unwritten: str | None = Field(None, min_length=1, description="an entity V+ asserts on that no tool writes")
    faulty_tool: str | None = Field(None, min_length=1, description="a tool that is there but wrong or misleading")

    @model_validator(mode="after")
    def _one(self) -> "RepairEvidence":
        given = [k for k in EVIDENCE if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(EVIDENCE)} (given: {', '.join(given) or 'none'})")
        return self


class Verdict(BaseModel):
    """The model's answer: the JSON schema every answer is validated against."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: Literal["verifier_fault", "world_fault", "hard_task"]
    pathway: Literal["repair_atom", "revise_builder", "supplement_pool", "keep_hard"]
    atom: str | None = Field(description="an atom id or hash of the prompt's list, or null")  # required, may be null
    reason: str = Field(min_length=10, max_length=1000)
    repair: RepairEvidence | None = None


@dataclass(frozen=True)
class AtomRef:
    """One atom of the environment as the prompt lists it."""

    id: str  # server:<app>@<spec hash>, intent:<app>/<kind>@<hash>, rule:<archetype>/<carrier>@<hash>, data:<dataset>@<hash>
    lines: tuple[str, ...]
    spec: Any = None  # a server atom's full spec (the version a repair patches)

    @property
    def hash(self) -> str:
        return self.id.rsplit("@", 1)[1]


@dataclass(frozen=True)
class Case:
    """What the agent reads about one zero-yield environment."""

    env: Environment
    attempts: tuple[Attempt, ...]
    rule: str | None = None  # the rule text as its carrier holds it (from the builder; None: not known)
    pointer: str | None = None  # where the carrier is, as the request names it
    atoms: tuple[AtomRef, ...] = ()

    @classmethod
    def of(cls, env: Environment, attempts: Iterable[Attempt], built: Any = None, pool: Any = None, data: Any = None) -> "Case":
        """The case of ``env``; ``built`` (builder.Built) gives the rule text, ``pool``/``data`` the non-server atoms."""
        parts = getattr(built, "parts", None) or {}
        return cls(env, tuple(attempts), parts.get("rule"), parts.get("pointer"), tuple(atoms_of(env, pool, data)))

    def atom(self, name: str) -> AtomRef | None:
        """The atom an answer names: by its id or by its hash."""
        name = name.strip()
        return next((a for a in self.atoms if name in (a.id, a.hash) or name == a.id.split(":", 1)[-1]), None)


def atoms_of(env: Environment, pool: Any = None, data: Any = None) -> list[AtomRef]:
    from envtrain.compose.atoms import spec_hash

    refs = [AtomRef(f"server:{app.name}@{spec_hash(app)}", tuple(_server_lines(app)), app) for app in env.apps]
    settings = env.provenance.settings
    if pool is not None:
        try:
            intent = pool.intent(settings["host"], settings["action"])
            refs.append(AtomRef(f"intent:{intent.app}/{intent.kind}@{intent.hash}",
                                (f"operation {intent.kind!r} on {intent.app}; verifier kinds {', '.join(intent.check_kinds)}",)))
            rule = pool.rule(settings["archetype"], settings["carrier"], bool(settings.get("exception")))
            exception = " with an exception" if rule.has_exception else ""
            refs.append(AtomRef(f"rule:{rule.archetype}/{rule.carrier}@{rule.hash}",
                                (f"{rule.archetype} in a {rule.carrier}{exception}; shape: {rule.shape}",)))
        except Exception:  # noqa: BLE001 (an environment from elsewhere: its server atoms are what matters)
            pass
    if data is not None and settings.get("dataset"):
        try:
            card = data.card(settings["dataset"])
            columns = ", ".join(f"{c.name} ({c.kind})" for c in card.columns)
            refs.append(AtomRef(f"data:{card.dataset}@{card.hash}", (f"{card.title}; {card.rows} rows; columns {columns}",)))
        except Exception:  # noqa: BLE001
            pass
    return refs


def _server_lines(app: Any) -> list[str]:
    lines = [app.description]
    if app.capabilities:
        lines.append("capability card: " + "; ".join(f"{k} -> {', '.join(v)}" for k, v in sorted(app.capabilities.items())))
    for tool in app.tools:
        lines.append(f"tool {tool.name}({_params(tool.parameters)}) [{tool.family}]: {tool.description}")
    return lines


def _params(schema: dict[str, Any]) -> str:
    required = set(schema.get("required") or ())
    out = []
    props = schema.get("properties") or {}
    for name in sorted(props, key=lambda n: (n not in required, n)):  # required first; the same text however the spec orders them
        prop = props[name]
        kind = "|".join(map(str, prop["enum"])) if "enum" in prop else str(prop.get("type", "any"))
        note = f" ({prop['description']})" if prop.get("description") else ""
        out.append(f"{name}{'' if name in required else '?'}: {kind}{note}")
    return ", ".join(out)


# -- the prompt ------------------------------------------------------------------------------


def messages(case: Case, programmatic: Diagnosis, history: list[tuple[str, str]]) -> list[dict[str, str]]:
    env, settings = case.env, case.env.provenance.settings
    lines = [f"Environment {env.id}" + (f" ({settings['domain']}: {settings.get('chain', '')})" if settings.get("domain") else "")]
    if settings.get("archetype"):
        lines.append(f"Rule archetype: {settings['archetype']}; carrier: {settings.get('carrier')} on {settings.get('carrier_app')};"
                     f" operation: {settings.get('action')} on {settings.get('host')}.")
    lines += ["", "Request:", env.request, ""]
    if case.rule is not None:
        lines += [f"Rule text (in its carrier: {case.pointer}):", case.rule, ""]
    else:
        lines += ["Rule text: not known apart from the world below (it lives in one document, file or record of W0).", ""]
    if env.persona:
        lines.append("The assistant acts as: " + ", ".join(f"{k}={v}" for k, v in env.persona.items()))
    lines.append(f"W0 (now is {env.world.base_time}):")
    for name, rows in env.world.tables.items():
        columns = ", ".join(rows[0]) if rows else "-"
        lines.append(f"- table {name}: {len(rows)} rows; columns {columns}")
        lines += [f"    {_cut(json.dumps(row, sort_keys=True, default=str))}" for row in rows[:MAX_ROWS]]
    lines += [f"- file {path}: {_cut(text)}" for path, text in env.world.files.items()]
    lines += [f"- public doc {doc.title!r}: {_cut(doc.body)}" for doc in env.docs]
    lines += ["", "Verifier:"]
    lines += [f"- V+ {a.name}: {a.describe()}" for a in env.verifier.positive]
    lines += [f"- V- {a.name}: {a.describe()}" for a in env.verifier.negative]
    lines += [f"- V+ check {c.name} (a script)" for c in env.verifier.checks]
    calls = env.reference_solution
    lines += ["", f"Reference solution ({len(calls)} calls; it passes the verifier):"]
    lines += [f"{i + 1}. {short_call(c.tool, c.arguments)}" for i, c in enumerate(calls[:MAX_CALLS])]
    if len(calls) > MAX_CALLS:
        lines.append(f"... and {len(calls) - MAX_CALLS} more")
    lines += ["", f"Teacher: {len(case.attempts)} attempts, none accepted. " + _attempt_lines(case.attempts)]
    lines += ["", "Atoms of this environment (use an id or its hash as \"atom\"):"]
    for ref in case.atoms:
        lines.append(f"- {ref.id}: {ref.lines[0]}")
        lines += [f"    {line}" for line in ref.lines[1:]]
    checked = "unstated values in V+, tools π needs, entities no tool writes, environment errors"
    lines += ["", f"Automatic checks ({checked}): no fault found ({programmatic.reason})."]
    if history:
        lines += ["", "Your previous answers were refused:"]
        lines += [f"- {text.strip()[:300]!r}: {reason}" for text, reason in history]
        lines.append("Answer again with one JSON object that fixes this.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def _attempt_lines(attempts: tuple[Attempt, ...]) -> str:
    distinct = list(dict.fromkeys((a.calls, a.errors, a.failed, a.stop) for a in attempts if not a.passed))
    if not distinct:
        return "No failed attempt was recorded."
    out = [f"{len(distinct)} distinct failed attempt(s); the first {min(len(distinct), MAX_ATTEMPTS)}:"]
    for n, (calls, errors, failed, stop) in enumerate(distinct[:MAX_ATTEMPTS], 1):
        out.append(f"\n  attempt {n}" + (f" (ended: {stop})" if stop else "") + ":")
        shown = "; ".join(calls[:15]) + (f"; ... {len(calls) - 15} more" if len(calls) > 15 else "")
        out.append(f"\n    calls: {shown or 'none'}")
        if errors:
            out.append(f"\n    tool errors: {'; '.join(_cut(e, 160) for e in errors[:5])}")
        out.append(f"\n    assertions that did not hold: {', '.join(failed) or 'none recorded'}")
    return "".join(out)


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- checking an answer ------------------------------------------------------------------------


def check_answer(text: str, case: Case) -> tuple[Diagnosis, Verdict]:
    """The diagnosis an answer gives, or ValueError with why it is refused."""
    value = json_object(text)
    if not isinstance(value, dict):
        raise ValueError('the answer is not a JSON object {"verdict": ..., "pathway": ..., "atom": ..., "reason": ...}')
    try:
        answer = Verdict.model_validate(value)
    except ValidationError as exc:
        raise ValueError(f"the object does not fit the schema: {format_validation_error(exc)}") from None
    if answer.pathway not in FITTING[answer.verdict]:
        fitting = " or ".join(FITTING[answer.verdict])
        raise ValueError(f"pathway {answer.pathway} does not follow from {answer.verdict} (it takes {fitting})")
    ref = case.atom(answer.atom) if answer.atom is not None else None
    if answer.atom is not None and ref is None:
        raise ValueError(f"atom {answer.atom!r} is not one of this environment's atoms ({', '.join(a.id for a in case.atoms)})")
    if answer.repair is not None and answer.pathway != "repair_atom":
        raise ValueError("repair is only for pathway repair_atom")
    evidence = {k: v for k, v in (answer.repair.model_dump() if answer.repair else {}).items() if v is not None}
    reason = " ".join(answer.reason.split())
    target = {"revise_builder": "builder", "keep_hard": "none",
              "supplement_pool": f"pool:{ref.id}" if ref else "pool"}.get(answer.pathway, ref.id if ref else "")
    found = Diagnosis(env_id=case.env.id, category=CATEGORIES[answer.verdict], pathway=answer.pathway.replace("_", " "),
                      target=target, reason=reason, evidence={**evidence, **({"atom": ref.id} if ref else {})}, source="llm")
    if answer.pathway == "repair_atom":
        servers = ", ".join(a.id for a in case.atoms if a.spec is not None)
        if ref is None or ref.spec is None:
            raise ValueError(f"a repair_atom verdict names the server atom to repair as atom (one of: {servers})")
        if not evidence:
            raise ValueError('a repair_atom verdict needs "repair": {"missing_tool": ...}, {"unwritten": ...} or {"faulty_tool": ...}')
        try:
            derive_repair(found, ref.spec)
        except ValueError as exc:
            raise ValueError(f"no repair can be derived from it: {exc}") from None
    return found, answer


# -- the agent -------------------------------------------------------------------------------


class DiagnosisAgent:
    """Asks an OpenAI-compatible endpoint for verdicts; keeps its running cost (calls, tokens, seconds)."""

    def __init__(self, url: str, model: str | None = None, *, budget: int = 3, timeout: float = 120.0, retries: int = 2,
                 max_tokens: int = 600, temperature: float = 0.2, transport: Any = None) -> None:
        self.chat = ChatClient(url, model, timeout=timeout, retries=retries, max_tokens=max_tokens, temperature=temperature,
                               transport=transport)
        self.budget = budget

    def diagnose(self, case: Case, programmatic: Diagnosis,
                 recorded: dict[str, Any] | None = None) -> tuple[Diagnosis, dict[str, Any]]:
        """The model's diagnosis and a record of the exchange; the programmatic diagnosis where the model gives no
        acceptable answer. ``recorded``: an exchange from an earlier run of this environment, replayed without a call."""
        if recorded and recorded.get("verdict") is not None:
            try:
                found, _ = check_answer(json.dumps(recorded["verdict"]), case)
                return found, {**recorded, "replayed": True}
            except ValueError:
                pass  # the case changed under it: ask again
        history: list[tuple[str, str]] = []
        record: dict[str, Any] = {"model": None, "answers": 0, "rejected": []}
        try:
            record["model"] = self.chat.model
            for _ in range(self.budget):
                text = self.chat.complete(messages(case, programmatic, history))
                try:
                    found, answer = check_answer(text, case)
                except ValueError as exc:
                    history.append((text, str(exc)))
                    continue
                return found, {**record, "answers": len(history) + 1, "rejected": [r for _, r in history],
                               "verdict": answer.model_dump(mode="json")}
            error = f"no acceptable verdict in {self.budget} answers"
        except EndpointError as exc:
            error = str(exc)
        return programmatic, {**record, "answers": len(history), "rejected": [r for _, r in history], "error": error}

    def close(self) -> None:
        self.chat.close()


def diagnose_first(case: Case, agent: DiagnosisAgent | None = None, stated: Iterable[str] | None = None,
                   recorded: dict[str, Any] | None = None) -> tuple[Diagnosis, dict[str, Any] | None]:
    """Programmatic checks first; the agent (where there is one) only on what they leave hard."""
    found = diagnose(case.env, list(case.attempts), stated)
    if agent is None or found.pathway != "keep hard":
        return found, None
    return agent.diagnose(case, found, recorded)


def summarize_exchanges(exchanges: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """How the agent did: environments asked, answers, first-answer acceptance, why answers were refused."""
    from collections import Counter

    seen = list(exchanges)
    asked = [x for x in seen if not x.get("replayed")]
    refused = Counter(r.split(":")[0][:80] for x in asked for r in x["rejected"])
    return {"asked": len(asked), "replayed": len(seen) - len(asked), "answers": sum(x["answers"] for x in asked),
            "accepted_first": sum(x["answers"] == 1 and "verdict" in x for x in asked),
            "no_verdict": sum("error" in x for x in asked), "refused_answers": dict(refused.most_common(10)),
            "models": sorted({x["model"] for x in seen if x.get("model")})}


__all__ = ["AtomRef", "Case", "DiagnosisAgent", "RepairEvidence", "Verdict", "atoms_of", "check_answer", "diagnose_first",
           "messages", "summarize_exchanges"]
