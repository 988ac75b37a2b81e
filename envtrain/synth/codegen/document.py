"""A generated app as data: the LLM's answer (``AppAnswer``) and the environment document built from it.

The workspace of a generated environment:

    app/tools.py          the generated code: one function per tool, ``name(ctx, args) -> dict``
    data/...              read-only data (Table 15 rule 3)
    state/session.json    the session state, matching ``state_schema``; tools update it atomically

Its app has no entities: every tool is ``handler: shell.call`` (``envtrain.sandbox.codecall``), and
the verifier is a checker script (``shell.check``) over the final workspace. Admission, collection
and training treat it like any other environment document.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from envtrain.core.app import App, Family, Tool
from envtrain.core.args import compile_validator
from envtrain.core.env import Call, Check, Environment, Provenance, PublicDoc, Verifier, WorldState, format_validation_error
from envtrain.core.errors import SpecError, ToolError
from envtrain.synth.catalogue import ScenarioCard

TOOLS_PATH = "app/tools.py"
STATE_PATH = "state/session.json"
MAX_CODE_CHARS = 60_000
MAX_DATA_CHARS = 200_000


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolDecl(_Answer):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    description: str = Field(min_length=1)
    family: Family  # create | read | list | search | update | delete | link | send | file
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class CallDecl(_Answer):
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class TaskDecl(_Answer):
    request: str = Field(min_length=1)  # what the user asks, in their words
    solution: tuple[CallDecl, ...] = Field(min_length=1)  # the reference solution: tool calls from W0
    check: str = Field(min_length=1)  # a Python checker script over the final workspace


class DocDecl(_Answer):
    title: str
    body: str


class AppAnswer(_Answer):
    """What the synthesis engine asks the model for, as one JSON object."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    description: str = Field(min_length=1)
    state_schema: dict[str, Any]  # JSON schema of state/session.json (an object)
    initial_state: dict[str, Any]
    data: dict[str, str] = Field(default_factory=dict)  # data/... path -> text
    tools: tuple[ToolDecl, ...] = Field(min_length=1)
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS)
    docs: tuple[DocDecl, ...] = ()
    persona: dict[str, str] = Field(default_factory=dict)
    task: TaskDecl

    @field_validator("data")
    @classmethod
    def _under_data(cls, value: dict[str, str]) -> dict[str, str]:
        outside = [p for p in value if not p.startswith("data/") or ".." in p.split("/")]
        if outside:
            raise ValueError(f"data paths must lie under data/: {outside[:3]}")
        if sum(len(t) for t in value.values()) > MAX_DATA_CHARS:
            raise ValueError(f"data holds at most {MAX_DATA_CHARS} characters in all")
        return value


def parse_answer(text: str) -> AppAnswer:
    """The model's text → an answer; SpecError says what is wrong, for the revision prompt."""
    data = _json_object(text)
    try:
        answer = AppAnswer.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"the answer does not fit the schema: {format_validation_error(exc)}") from None
    try:
        compile_validator({**answer.state_schema, "type": "object"})(answer.initial_state)
    except ToolError as exc:
        raise SpecError(f"initial_state does not match state_schema: {exc.message}") from None
    except Exception as exc:  # a schema the validator cannot read
        raise SpecError(f"state_schema is not a JSON schema this validator reads: {exc}") from None
    names = [t.name for t in answer.tools]
    unknown = sorted({c.tool for c in answer.task.solution} - set(names))
    if unknown:
        raise SpecError(f"the solution calls tools that are not declared: {unknown}")
    return answer


def _json_object(text: str) -> Any:
    """The outermost {...} of the text, or of its first fenced block when the whole does not parse."""
    bodies = [text]
    if "```" in text:
        inner = text.split("```", 2)[1]
        first, _, rest = inner.partition("\n")
        bodies.append(rest if "{" not in first else inner)
    error = "the answer holds no JSON object"
    for body in bodies:
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            continue
        try:
            return json.loads(body[start:end + 1])
        except json.JSONDecodeError as exc:
            error = f"the answer is not valid JSON: {exc.msg} at position {exc.pos}"
    raise SpecError(error)


def build_environment(answer: AppAnswer, card: ScenarioCard, *, base_time: str = "2026-03-02T08:00:00Z",
                      settings: dict[str, Any] | None = None) -> Environment:
    """The environment document; SpecError when a piece does not fit the document's own rules."""
    files = {TOOLS_PATH: answer.code, STATE_PATH: json.dumps(answer.initial_state, indent=1, sort_keys=True) + "\n", **answer.data}
    try:
        app = App(name=answer.name, description=answer.description, entities={},
                  tools=tuple(Tool(name=t.name, description=t.description, family=t.family, parameters=t.parameters,
                                   handler="shell.call") for t in answer.tools))
        return Environment(
            apps=(app,), world=WorldState(base_time=base_time, files=files), request=answer.task.request,
            persona=dict(answer.persona), docs=tuple(PublicDoc(title=d.title, body=d.body) for d in answer.docs),
            verifier=Verifier(positive=(), checks=(Check(name="the task's outcome", handler="shell.check", script=answer.task.check),)),
            reference_solution=tuple(Call(tool=c.tool, arguments=c.arguments) for c in answer.task.solution),
            provenance=Provenance(source="synth", settings={"kind": "llm", "scenario": card.key, "scenario_id": card.id,
                                                            **(settings or {})}),
        )
    except (ValidationError, SpecError, ValueError) as exc:
        message = format_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise SpecError(f"the answer does not make an environment: {message}") from None
