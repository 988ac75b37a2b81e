"""The environment document: one canonical JSON (W0, q, V, π, apps, provenance) with a content id."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer, model_validator

from envtrain.core.app import App
from envtrain.core.condition import Assertion
from envtrain.core.errors import SpecError
from envtrain.core.io import atomic_write_text, canonical_json, content_hash, load_document

Scalar = Union[str, int, float, bool, None]


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WorldState(_Doc):
    """W0 as data: rows per qualified entity, workspace files, the clock's origin, session values."""

    base_time: str = "2026-01-05T09:00:00Z"
    tables: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)
    session: dict[str, Scalar] = Field(default_factory=dict)  # read by conditions as $session.NAME


class PublicDoc(_Doc):
    """A document the agent can read at reset: a policy sheet, a note, access instructions."""

    title: str
    body: str


class Check(_Doc):
    """A V+ assertion no condition can say: a script run over the final workspace by a handler
    (``shell.check`` runs it in a sandbox). It holds when the script reports ``{"pass": true}``."""

    name: str = Field(min_length=1)
    handler: str  # a registered handler, as a tool's ``handler`` names one
    script: str = Field(min_length=1)


class Verifier(_Doc):
    positive: tuple[Assertion, ...]  # V+: what must be written
    negative: tuple[Assertion, ...] = ()  # V-: what must stay untouched
    checks: tuple[Check, ...] = ()  # more V+, as checker scripts; the condition form is preferred where it can say it

    @model_serializer(mode="wrap")
    def _omit_no_checks(self, handler: Any) -> Any:
        # Left out when empty, so every document written before checks existed keeps its id.
        data = handler(self)
        if isinstance(data, dict) and not data.get("checks"):
            data.pop("checks", None)
        return data


class Call(_Doc):
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Provenance(_Doc):
    source: str = "hand-written"  # compose | scale | synth | bench:NAME | hand-written
    atoms: tuple[str, ...] = ()  # content hashes of the atoms used
    parent: str | None = None  # the environment this one was derived from (RES lineage)
    depth: int = 0
    plan: tuple[dict[str, Any], ...] = ()  # the transformation plan that made it from its parent
    settings: dict[str, Any] = Field(default_factory=dict)


class Environment(_Doc):
    """E = (W0, q, V, π) with the apps it runs on. ``id`` is the hash of everything else."""

    id: str = ""
    apps: tuple[App, ...]
    world: WorldState = WorldState()
    request: str
    persona: dict[str, Scalar] = Field(default_factory=dict)  # the actor: read by conditions as $actor.NAME
    docs: tuple[PublicDoc, ...] = ()
    verifier: Verifier
    reference_solution: tuple[Call, ...]
    provenance: Provenance = Provenance()

    @field_validator("apps", mode="before")
    @classmethod
    def _builtin_apps(cls, value: Any) -> Any:
        # An app may be named instead of spelt out; the canonical document holds the full spec.
        if isinstance(value, (list, tuple)):
            from envtrain.apps import load_app

            return [load_app(v) if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _identify(self) -> "Environment":
        expected = content_hash(self.model_dump(mode="json", exclude={"id"}))
        if not self.id:
            object.__setattr__(self, "id", expected)
        elif self.id != expected:
            raise SpecError(f"id {self.id!r} does not match the content (its hash is {expected!r}): remove the id or fix it")
        return self

    # -- io -----------------------------------------------------------------------------------

    @classmethod
    def parse(cls, data: Any, *, source: str = "environment") -> "Environment":
        """Validate raw data; every problem becomes one SpecError naming the field path."""
        if not isinstance(data, dict):
            raise SpecError(f"{source}: not an environment (expected a JSON object, got {type(data).__name__})")
        missing = [k for k in ("apps", "request", "verifier", "reference_solution") if k not in data]
        if len(missing) == 4:
            raise SpecError(f"{source}: not an environment (no apps, request, verifier or reference_solution)")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SpecError(f"{source}: {format_validation_error(exc)}") from None

    @classmethod
    def load(cls, path: str | Path) -> "Environment":
        try:
            data = load_document(path)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        return cls.parse(data, source=str(path))

    def to_json(self, *, indent: int | None = None) -> str:
        if indent is None:
            return canonical_json(self.model_dump(mode="json"))
        import json

        return json.dumps(self.model_dump(mode="json"), indent=indent, ensure_ascii=False, sort_keys=True)

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, self.to_json(indent=1) + "\n")

    def app(self, name: str) -> App:
        for app in self.apps:
            if app.name == name:
                return app
        raise KeyError(name)


def format_validation_error(exc: ValidationError) -> str:
    """Pydantic's report as short lines: ``verifier.positive.0.where.1: clause ...: unknown column``."""
    lines = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        message = err["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            message = message.removeprefix(prefix)
        lines.append(f"{loc}: {message}")
    more = len(exc.errors()) - 5
    if more > 0:
        lines.append(f"... and {more} more")
    return "; ".join(lines)
