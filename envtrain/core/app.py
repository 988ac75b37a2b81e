"""App specs (server atoms): entities, tools, guards, effects and a capability card, as data."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from envtrain.core.condition import CardinalityField, ClauseField, ExprField, Cardinality
from envtrain.core.errors import ErrorKind, SpecError

ColumnType = Literal["integer", "number", "text", "boolean", "date", "datetime", "json"]
Family = Literal["create", "read", "list", "search", "update", "delete", "link", "send", "file"]
WRITE_FAMILIES = frozenset({"create", "update", "delete", "link", "send", "file"})
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Column(_Spec):
    type: ColumnType
    description: str = ""
    required: bool = False
    default: ExprField | None = None  # on insert, when the column is not given or its value is null: "$now", "'open'", 0
    enum: tuple[str, ...] | None = None
    unique: bool = False
    ref: str | None = None  # "entity.column" of the same app: the value must exist there


class Constraint(_Spec):
    """A rule on every row a write touches: it satisfies all of ``where``, and does not match all of ``forbid``.

    ``forbid`` says implications: "an escalated ticket names its team" is
    ``forbid: ["status = 'escalated'", "escalated_to is null"]``.
    """

    name: str
    where: tuple[ClauseField, ...] = ()
    forbid: tuple[ClauseField, ...] = ()
    message: str

    @model_validator(mode="after")
    def _one_form(self) -> "Constraint":
        if not self.where and not self.forbid:
            raise SpecError(f"constraint {self.name!r} needs 'where' (must hold) or 'forbid' (must not match)")
        return self


class Entity(_Spec):
    description: str = ""
    primary_key: str = "id"  # an integer primary key is assigned on insert when not given
    columns: dict[str, Column]
    constraints: tuple[Constraint, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> "Entity":
        for name in self.columns:
            if not _is_name(name):
                raise SpecError(f"column name {name!r} is not an identifier")
        if self.primary_key not in self.columns:
            raise SpecError(f"primary key {self.primary_key!r} is not a column")
        return self


class Guard(_Spec):
    """A precondition (checked before a tool runs) or postcondition (after), with the refusal the agent sees.

    A guard that reads an optional argument applies only when that argument is given.
    """

    entity: str
    where: tuple[ClauseField, ...] = ()
    count: CardinalityField = Cardinality(">=", 1)
    error: ErrorKind = ErrorKind.INVALID_TRANSITION
    message: str  # may name arguments: "Ticket {ticket_id} is closed."


class Effect(_Spec):
    """A declarative write. ``link`` inserts a row unless one with the same given values exists
    ($now-valued columns aside); ``send`` inserts a message-like row."""

    kind: Literal["insert", "update", "delete", "link", "send"]
    entity: str
    values: dict[str, ExprField] = Field(default_factory=dict)  # insert/link/send: the row; update: what to set
    where: tuple[ClauseField, ...] = ()  # update/delete: which rows
    optional: bool = False  # an update/delete that matches no row is fine (otherwise: not_found)


class Returns(_Spec):
    fields: tuple[str, ...] | None = None  # None: every column
    order_by: str | None = None  # "column" or "column desc"
    limit: int = Field(default=50, ge=1, le=10_000)


class Tool(_Spec):
    name: str = Field(pattern=NAME_PATTERN)
    description: str
    family: Family
    entity: str | None = None  # the entity read, listed or searched
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    preconditions: tuple[Guard, ...] = ()
    where: tuple[ClauseField, ...] = ()  # read filter; a clause naming an absent optional $arg is dropped
    search: tuple[str, ...] = ()  # columns matched (any, ignoring case) against the "query" argument
    effects: tuple[Effect, ...] = ()
    postconditions: tuple[Guard, ...] = ()
    returns: Returns = Returns()
    handler: str | None = None  # a registered Python handler, only where no declarative effect can say it

    @property
    def writes(self) -> bool:
        return self.family in WRITE_FAMILIES

    @field_validator("parameters")
    @classmethod
    def _schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type") != "object" or not isinstance(value.get("properties", {}), dict):
            raise SpecError("parameters must be a JSON schema with type 'object' and a 'properties' mapping")
        _check_schema(value, "parameters")
        return value

    @model_validator(mode="after")
    def _check(self) -> "Tool":
        if self.family in ("read", "list", "search") and self.entity is None and self.handler is None:
            raise SpecError(f"tool {self.name}: a {self.family} tool names the entity it reads")
        if self.family in WRITE_FAMILIES - {"file"} and not self.effects and self.handler is None:
            raise SpecError(f"tool {self.name}: a {self.family} tool needs effects or a handler")
        if self.search and "query" not in self.parameters.get("properties", {}):
            raise SpecError(f"tool {self.name}: a search tool takes a 'query' parameter")
        return self

    def openai_schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


class App(_Spec):
    """One server atom. Entities are referred to by bare name inside the app, as ``app.entity`` outside."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    description: str
    entities: dict[str, Entity]
    tools: tuple[Tool, ...]
    capabilities: dict[str, tuple[str, ...]] = Field(default_factory=dict)  # operation kind -> tools

    @model_validator(mode="after")
    def _check(self) -> "App":
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise SpecError(f"app {self.name}: tool names repeat: {duplicates}")
        for kind, tools in self.capabilities.items():
            unknown = [t for t in tools if t not in names]
            if unknown:
                raise SpecError(f"app {self.name}: capability {kind!r} names unknown tools {unknown}")
        for name in self.entities:
            if not _is_name(name):
                raise SpecError(f"app {self.name}: entity name {name!r} is not an identifier")
        return self

    def tool(self, name: str) -> Tool:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)


_SCHEMA_KEYS = frozenset({
    "type", "description", "enum", "items", "properties", "required", "minimum", "maximum",
    "minLength", "maxLength", "minItems", "maxItems", "additionalProperties", "default", "format", "pattern", "title",
})
_SCHEMA_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def _check_schema(schema: Any, path: str) -> None:
    """Tool schemas are shown to models as written: an unknown key is a typo (YAML's unquoted commas make them)."""
    if not isinstance(schema, dict):
        raise SpecError(f"{path}: a JSON schema is an object, got {schema!r}")
    unknown = sorted(set(schema) - _SCHEMA_KEYS)
    if unknown:
        raise SpecError(f"{path}: unknown JSON-schema key {unknown[0]!r} (a description with a comma needs quotes in YAML)")
    kinds = schema.get("type", [])
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind not in _SCHEMA_TYPES:
            raise SpecError(f"{path}: unknown type {kind!r} (types: {', '.join(sorted(_SCHEMA_TYPES))})")
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise SpecError(f"{path}.properties: a mapping of parameter names to schemas")
    missing = [name for name in schema.get("required", []) if name not in props]
    if missing:
        raise SpecError(f"{path}: required {missing} are not in properties")
    for name, sub in props.items():
        _check_schema(sub, f"{path}.{name}")
    if "items" in schema:
        _check_schema(schema["items"], f"{path}[]")


def _is_name(text: str) -> bool:
    import re

    return re.match(NAME_PATTERN, text) is not None
