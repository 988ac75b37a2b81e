"""The relational schema of a world: which entities exist, their SQLite tables and column types."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping

from envtrain.core.app import App, Column, Entity
from envtrain.core.errors import SpecError

FILES = "files"  # the workspace file store: one entity every world has, not owned by an app
_FILES_ENTITY = Entity(
    description="workspace files",
    primary_key="path",
    columns={"path": Column(type="text", required=True), "content": Column(type="text", required=True)},
)
_AFFINITY = {"integer": "INTEGER", "number": "REAL", "boolean": "INTEGER"}


@dataclass(frozen=True)
class EntityInfo:
    name: str  # qualified: "helpdesk.tickets", or "files"
    app: str | None
    table: str  # SQLite table name
    spec: Entity

    @property
    def columns(self) -> Mapping[str, Column]:
        return self.spec.columns

    def column(self, name: str) -> Column:
        try:
            return self.spec.columns[name]
        except KeyError:
            raise SpecError(
                f"unknown column {name!r} in entity {self.name!r} (columns: {', '.join(self.spec.columns)})"
            ) from None

    @property
    def integer_key(self) -> bool:
        return self.spec.columns[self.spec.primary_key].type == "integer"

    def ddl(self) -> list[str]:
        pk = self.spec.primary_key
        cols = []
        for name, col in self.spec.columns.items():
            decl = f'"{name}" {_AFFINITY.get(col.type, "TEXT")}'
            if name == pk:
                decl += " PRIMARY KEY"
            elif col.unique:
                decl += " UNIQUE"
            cols.append(decl)
        statements = [f'CREATE TABLE "{self.table}" ({", ".join(cols)})']
        for name, col in self.spec.columns.items():
            if col.ref and name != pk and not col.unique:
                statements.append(f'CREATE INDEX "{self.table}__{name}" ON "{self.table}" ("{name}")')
        return statements


class Schema:
    """Every entity of an environment, by qualified name; bare names resolve within one app."""

    def __init__(self, apps: Iterable[App]) -> None:
        entities = {FILES: EntityInfo(FILES, None, FILES, _FILES_ENTITY)}
        for app in apps:
            for name, spec in app.entities.items():
                qualified = f"{app.name}.{name}"
                if qualified in entities:
                    raise SpecError(f"entity {qualified!r} is defined twice (is app {app.name!r} listed twice?)")
                entities[qualified] = EntityInfo(qualified, app.name, f"{app.name}__{name}", spec)
        self.entities: Mapping[str, EntityInfo] = MappingProxyType(entities)

    def resolve(self, name: str, app: str | None = None) -> EntityInfo:
        """``name`` as written: qualified (app.entity), ``files``, or bare inside ``app``."""
        if app is not None and f"{app}.{name}" in self.entities:
            return self.entities[f"{app}.{name}"]
        if name in self.entities:
            return self.entities[name]
        known = ", ".join(sorted(self.entities))
        raise SpecError(f"unknown entity {name!r} (entities: {known})")

    def ddl(self) -> list[str]:
        statements = ['CREATE TABLE "__meta__" ("key" TEXT PRIMARY KEY, "value")']
        for info in self.entities.values():
            statements.extend(info.ddl())
        return statements
