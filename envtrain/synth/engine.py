"""The environment synthesis engine (EnvCraft §3): a scenario card → an admitted environment, by an LLM.

The model writes the whole app as one JSON answer (``codegen.document.AppAnswer``): a state schema
and initial state, read-only data, tool declarations and their code under the Table 15 rules,
docs, and one task (request, reference solution, checker script). Each answer goes through

    parse → Table 15 read (codegen.rules) → document → Table 15 run in the sandbox (codegen.probe)
          → admission (the five conditions, the checker as V+)

and the first stage that fails sends its diagnostics back to the model, which revises its answer,
up to ``revisions`` times. Nothing here runs without an endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envtrain.core.admission import AdmissionReport
from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.core.runtime import Handler
from envtrain.synth.catalogue import ScenarioCard
from envtrain.synth.codegen.document import AppAnswer, build_environment, parse_answer
from envtrain.synth.codegen.rules import ERROR_KINDS, RULES, check_checker, check_tools
from envtrain.synth.llm import ChatClient, LLMError

STAGES = ("endpoint", "answer", "rules", "document", "probe", "admission")

SYSTEM = (
    "You build executable tool environments for training agents (EnvCraft). Given a scenario, you write a small "
    "stateful app as Python code, its data and state, and one task with a reference solution and a checker. "
    "Answer with one JSON object and nothing else."
)

CONTRACT = """# The answer: one JSON object
- name: the app's name (lowercase letters, digits, _), description: one sentence
- state_schema: a JSON schema (type object) of state/session.json; initial_state: the state at the start, matching it
- data: {{"data/FILE": "text"}}: read-only data the tools read (records, catalogues, limits)
- tools: [{{"name", "description", "family", "parameters"}}]: family is one of create, read, list, search, update,
  delete, link, send, file; parameters is a JSON schema of type object with properties and required
- code: the Python 3 source of app/tools.py (standard library only), one function per tool: def NAME(ctx, args) -> dict
- docs: [{{"title", "body"}}]: what the agent may read (policies, rules); the agent sees only docs and tool answers
- persona: {{"name", "role"}} of the user the agent works for
- task: {{"request": the user's request, "solution": [{{"tool", "arguments"}}] calls that solve it from the initial
  state, "check": a Python 3 script that reads the final workspace (state/session.json and files) and prints on its
  last line {{"pass": true|false, "score": 0..1, "detail": "..."}}}}. The check must fail on the initial state and pass
  after the solution; every write call of the solution must be needed for it to pass.

# The code runs in a sandbox, one process per call, working directory = the workspace
ctx holds: base_time, action_index, now (= base_time + action_index seconds, ISO 8601), data_dir ("data"),
state_path ("state/session.json"), lock_path ("state/session.lock"). args holds the call's arguments.

# Rules (EnvCraft Table 15), each checked by reading and by running the code; a violation is rejected
""" + "\n".join(f"{n}. {text}" for n, text in RULES.items() if n) + f"""
Concretely: tool functions return dicts, never raise; a failure is {{"error": {{"kind": KIND, "message": "..."}}}}
with KIND one of {sorted(ERROR_KINDS)}; helpers start with "_"; module-level values are immutable (tuples,
strings, numbers); never write under data/; write the session to a temporary file in state/ and os.replace it;
lock state/session.lock with fcntl.flock(f, LOCK_EX | LOCK_NB) in a loop until a deadline of a few seconds, then
return lock_timeout without naming the lock file; take times from ctx["now"], never time.time() or datetime.now().

# Structured errors (EnvCraft Table 16)
- missing_field: name the missing field and what it needs
- invalid_transition: report the current state and why the transition is invalid
- permission_denied: name the entity and say write permission is absent
- lock_timeout: ask for a retry without exposing the lock path
- session_not_found: say the session may have expired or been reset
- missing_binding: say the trainer must initialize the rollout
"""


@dataclass
class Attempt:
    stage: str  # the first stage that failed, or "accepted"
    diagnostics: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "diagnostics": self.diagnostics}


@dataclass
class Synthesis:
    card: ScenarioCard
    env: Environment | None
    attempts: list[Attempt]
    admission: AdmissionReport | None = None  # the accepted environment's

    @property
    def stage(self) -> str:
        return self.attempts[-1].stage if self.attempts else "endpoint"


def prompt(card: ScenarioCard) -> str:
    kind = "a workspace (Claw-like) environment" if card.domain == "claw" else "a general tool-use environment"
    return (f"# Scenario ({card.key}, {kind})\n{card.name}: {card.description}\n\n"
            f"Write one app for this scenario with 3 to 6 tools and one task that needs several of them.\n\n{CONTRACT}")


def revision(attempt: Attempt) -> str:
    lines = "\n".join(f"- {d}" for d in attempt.diagnostics[:20])
    return (f"Your answer was rejected at the {attempt.stage} stage:\n{lines}\n\n"
            "Fix every point and answer again with the whole JSON object.")


def evaluate(text: str, card: ScenarioCard, *, backend: str, handlers: Mapping[str, Handler], search_budget: int,
             settings: dict[str, Any]) -> tuple[Environment | None, Attempt, AdmissionReport | None]:
    """One answer through every stage; the environment (and its admission) when all pass."""
    from envtrain.synth.admit import admit
    from envtrain.synth.codegen.probe import probe

    try:
        answer: AppAnswer = parse_answer(text)
    except SpecError as exc:
        return None, Attempt("answer", [str(exc)]), None
    violations = check_tools(answer.code, [t.name for t in answer.tools]) + check_checker(answer.task.check)
    if violations:
        return None, Attempt("rules", [str(v) for v in violations]), None
    try:
        env = build_environment(answer, card, settings=settings)
    except SpecError as exc:
        return None, Attempt("document", [str(exc)]), None
    report = probe(env, backend)
    if not report.ok:
        return None, Attempt("probe", [str(v) for v in report.violations] + report.failures), None
    env, admission = admit(env, handlers=handlers, search_budget=search_budget)
    if not admission.admitted:
        return None, Attempt("admission", [f"condition ({f.condition}) {f.assertion or ''}: {f.reason}".replace(" : ", ": ")
                                           for f in admission.failures]), admission
    return env, Attempt("accepted"), admission


def synthesize(card: ScenarioCard, client: ChatClient, *, backend: str, handlers: Mapping[str, Handler], revisions: int = 3,
               search_budget: int = 120) -> Synthesis:
    """Ask, check, feed the failures back; at most ``revisions`` revisions after the first answer."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt(card)}]
    attempts: list[Attempt] = []
    settings = {"model": client.model}
    for _ in range(revisions + 1):
        try:
            text = client.complete(messages)
        except LLMError as exc:
            attempts.append(Attempt("endpoint", [str(exc)]))
            break
        env, attempt, admission = evaluate(text, card, backend=backend, handlers=handlers, search_budget=search_budget,
                                settings={**settings, "attempts": len(attempts) + 1})
        attempts.append(attempt)
        if env is not None:
            return Synthesis(card, env, attempts, admission)
        # The model sees its last answer and what was wrong with it (not every earlier answer: the context stays bounded).
        messages = messages[:2] + [{"role": "assistant", "content": text}, {"role": "user", "content": revision(attempt)}]
    return Synthesis(card, None, attempts)


def attempts_log(result: Synthesis) -> str:
    return json.dumps({"scenario": result.card.key, "kept": result.env is not None,
                       "attempts": [a.to_dict() for a in result.attempts]}, sort_keys=True)
