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

    def ddl(self, schema: "Schema") -> list[str]:
        """CREATE TABLE with the column rules SQLite enforces itself, atomically per statement:
        NOT NULL for required, named CHECKs for type and enum, REFERENCES for refs."""
        pk = self.spec.primary_key
        cols = []
        for name, col in self.spec.columns.items():
            decl = f'"{name}" {_AFFINITY.get(col.type, "TEXT")}'
            if name == pk:
                decl += " PRIMARY KEY"
            elif col.unique:
                decl += " UNIQUE"
            if col.required and not (name == pk and col.type == "integer"):
                decl += " NOT NULL"
            for rule, check in self.column_checks(name, col):
                decl += f' CONSTRAINT "{rule}" CHECK ({check})'
            if col.ref:
                target, column = self.ref_target(schema, name)
                decl += f' REFERENCES "{target.table}" ("{column}")'
            cols.append(decl)
        statements = [f'CREATE TABLE "{self.table}" ({", ".join(cols)})']
        for name, col in self.spec.columns.items():
            if col.ref and name != pk and not col.unique:
                statements.append(f'CREATE INDEX "{self.table}__{name}" ON "{self.table}" ("{name}")')
        return statements

    def column_checks(self, name: str, col: Column) -> list[tuple[str, str]]:
        """(rule name, SQL) pairs; rule names are what SQLite reports and ``rule_message`` explains."""
        c = f'"{name}"'
        checks = [(f"{self.name}.{name}:type", _TYPE_SQL[col.type].format(c=c))] if col.type in _TYPE_SQL else []
        if col.enum:
            options = ", ".join("'" + v.replace("'", "''") + "'" for v in col.enum)
            checks.append((f"{self.name}.{name}:enum", f"{c} IN ({options})"))
        return checks

    def rule_message(self, rule: str) -> str:
        name, _, kind = rule.rpartition(":")
        column = name.rsplit(".", 1)[-1]
        if kind == "enum":
            return f"{name} must be one of: {', '.join(self.spec.columns[column].enum or ())}"
        return f"{name} must be {_TYPE_WORDS.get(self.spec.columns[column].type, self.spec.columns[column].type)}"

    def ref_target(self, schema: "Schema", name: str) -> tuple["EntityInfo", str]:
        ref = self.spec.columns[name].ref or ""
        target_name, _, column = ref.rpartition(".")
        if not target_name:
            raise SpecError(f"entity {self.name}: column {name}: ref {ref!r} is written entity.column")
        target = schema.resolve(target_name, self.app)
        spec = target.column(column)
        if column != target.spec.primary_key and not spec.unique:
            raise SpecError(f"entity {self.name}: column {name}: ref {ref!r} must name a primary key or unique column")
        return target, column

    def ref_message(self, schema: "Schema", name: str) -> str:
        target, column = self.ref_target(schema, name)
        return f"{self.name}.{name} must name an existing {target.name}.{column}"


_TYPE_SQL = {  # what a stored value of each column type must look like
    "integer": "typeof({c}) IN ('integer', 'null')",
    "number": "typeof({c}) IN ('integer', 'real', 'null')",
    "boolean": "{c} IN (0, 1)",
    "date": "{c} GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]'",
    "datetime": "{c} GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z'",
    "text": "typeof({c}) IN ('text', 'null')",
}
_TYPE_WORDS = {"date": "a date (YYYY-MM-DD)", "datetime": "a time (YYYY-MM-DDTHH:MM:SSZ)", "boolean": "true or false"}


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
        near = [q for q in self.entities if q.endswith(f".{name}")]
        if near:
            raise SpecError(f"unknown entity {name!r}: outside its app an entity is named app.entity (did you mean {' or '.join(map(repr, near))}?)")
        known = ", ".join(sorted(self.entities))
        raise SpecError(f"unknown entity {name!r} (entities: {known})")

    def ddl(self) -> list[str]:
        statements = ['CREATE TABLE "__meta__" ("key" TEXT PRIMARY KEY, "value")']
        for info in self.entities.values():
            statements.extend(info.ddl(self))
        return statements

    def by_table(self, table: str) -> EntityInfo | None:
        for info in self.entities.values():
            if info.table == table:
                return info
        return None

    def integrity_message(self, error: str, refs: str = "") -> str:
        """SQLite's constraint report in the spec's own words."""
        if error.startswith("CHECK constraint failed: "):
            rule = error.removeprefix("CHECK constraint failed: ")
            info = self.entities.get(rule.rpartition(":")[0].rpartition(".")[0])
            return info.rule_message(rule) if info else error
        for prefix, words in (("NOT NULL constraint failed: ", "is required"), ("UNIQUE constraint failed: ", "must be unique: that value is taken")):
            if error.startswith(prefix):
                table, _, column = error.removeprefix(prefix).partition(".")
                info = self.by_table(table)
                return f"{info.name if info else table}.{column} {words}"
        if error.startswith("FOREIGN KEY constraint failed"):
            return refs or "a reference names a record that does not exist, or a record others refer to was removed"
        return error
