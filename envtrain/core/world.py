"""The world: relational rows and workspace files in one SQLite store, with a deterministic clock.

``serialize()``/``deserialize()`` are the snapshot and reset of an episode; ``content_hash()`` is
a canonical digest of rows and files (not of SQLite's page layout, which varies); time is
``base_time + action_index`` seconds, never the wall clock, so runs replay exactly.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from datetime import datetime, timedelta, timezone
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from envtrain.core.app import Column
from envtrain.core.compile import ISO_SECONDS
from envtrain.core.errors import SpecError
from envtrain.core.schema import FILES, EntityInfo, Schema

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def parse_time(text: str) -> datetime:
    if not isinstance(text, str) or not _DATETIME.match(text):
        raise SpecError(f"a time is written YYYY-MM-DDTHH:MM:SSZ, got {text!r}")
    return datetime.strptime(text, ISO_SECONDS).replace(tzinfo=timezone.utc)


_ACCEPTS = {  # what a JSON value of each column type may be
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "text": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "date": lambda v: isinstance(v, str) and _DATE.match(v) is not None,
    "datetime": lambda v: isinstance(v, str) and _DATETIME.match(v) is not None,
    "json": lambda v: isinstance(v, (list, dict, str, int, float, bool)),
}


_STORED_AS_IS = frozenset({"integer", "number", "text", "date", "datetime"})  # boolean and json are converted
_ABSENT = object()
_EMPTY_JSON = {list: "[]", dict: "{}"}  # the commonest json values, stored without an encoder call


def to_sql(value: Any, col: Column, where: str) -> Any:
    """Check a JSON value against its column type and convert it to what SQLite stores."""
    if value is None:
        return None
    kind = col.type
    if not _ACCEPTS[kind](value):
        raise SpecError(f"{where}: expected {kind}, got {value!r}")
    if kind == "boolean":
        return int(value)
    if kind == "json":
        if not value and type(value) in _EMPTY_JSON:
            return _EMPTY_JSON[type(value)]
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return value


def from_sql(value: Any, col: Column) -> Any:
    if value is None:
        return None
    if col.type == "boolean":
        return bool(value)
    if col.type == "json":
        return json.loads(value)
    return value


@dataclass(frozen=True)
class RowShape:
    """How a stored row becomes JSON: names, and the few columns that need converting."""

    names: tuple[str, ...]
    convert: tuple[tuple[int, Column], ...]  # (index, column) of boolean and json columns

    @classmethod
    def of(cls, columns: Sequence[tuple[str, Column]]) -> "RowShape":
        return cls(tuple(n for n, _ in columns), tuple((i, c) for i, (_, c) in enumerate(columns) if c.type in ("boolean", "json")))

    def row(self, values: Sequence[Any]) -> dict[str, Any]:
        out = dict(zip(self.names, values))
        for i, col in self.convert:
            name = self.names[i]
            out[name] = from_sql(out[name], col)
        return out


def _connect(foreign_keys: bool = True) -> sqlite3.Connection:
    # Autocommit: the runtime opens its own savepoints. Sessions may be stepped from a worker thread.
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
    return conn


class World:
    """One live world. Owned by one session; never shared between sessions."""

    def __init__(self, schema: Schema, conn: sqlite3.Connection, base_time: str, action_index: int = 0) -> None:
        self.schema = schema
        self.conn = conn
        self.base_time = base_time
        self._base = parse_time(base_time)
        self.action_index = action_index
        self._now: tuple[int, str] = (-1, "")

    # -- building and snapshots ---------------------------------------------------------------

    @classmethod
    def create(
        cls,
        schema: Schema,
        *,
        base_time: str,
        tables: Mapping[str, list[dict[str, Any]]],
        files: Mapping[str, str],
    ) -> "World":
        conn = _connect(foreign_keys=False)  # rows arrive in any order; references are checked after
        for statement in schema.ddl():
            conn.execute(statement)
        world = cls(schema, conn, base_time)
        conn.execute("BEGIN")
        try:
            for name, rows in tables.items():
                info = schema.resolve(name)
                world._insert_rows(info, rows)
            world._insert_rows(schema.resolve(FILES), [{"path": p, "content": c} for p, c in files.items()])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        dangling = conn.execute("PRAGMA foreign_key_check").fetchall()
        if dangling:
            table, rowid, parent, _ = dangling[0]
            child, target = schema.by_table(table), schema.by_table(parent)
            raise SpecError(
                f"world.tables[{child.name if child else table!r}]: the row with rowid {rowid} refers to a"
                f" {target.name if target else parent} that is not in the world ({len(dangling)} dangling reference(s))"
            )
        conn.execute("PRAGMA foreign_keys = ON")
        return world

    def _insert_rows(self, info: EntityInfo, rows: list[dict[str, Any]]) -> None:
        columns = list(info.columns)
        names = ", ".join(f'"{c}"' for c in columns)
        sql = f'INSERT INTO "{info.table}" ({names}) VALUES ({", ".join("?" for _ in columns)})'
        values = []
        known = set(columns)
        defaults = {c: self._default(info, c) for c in columns}
        # Per column: its type check, and whether SQLite stores an accepted value as it is (no conversion call).
        specs = [(c, info.columns[c], _ACCEPTS[info.columns[c].type], info.columns[c].type in _STORED_AS_IS) for c in columns]
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise SpecError(f"world.tables[{info.name!r}][{i}]: a row is an object, got {type(row).__name__}")
            if not known.issuperset(row):
                raise SpecError(f"world.tables[{info.name!r}][{i}]: unknown columns {sorted(set(row) - known)} (columns: {', '.join(columns)})")
            # The location string is built only when a value is wrong (to_sql then raises with it): building it
            # per value dominated large worlds.
            values.append([defaults[c] if (v := row.get(c, _ABSENT)) is _ABSENT
                           else v if v is None or (as_is and accept(v))
                           else to_sql(v, col, "") if accept(v)
                           else to_sql(v, col, f"world.tables[{info.name!r}][{i}].{c}")
                           for c, col, accept, as_is in specs])
        try:
            self.conn.executemany(sql, values)
        except sqlite3.IntegrityError as exc:
            raise SpecError(f"world.tables[{info.name!r}]: {self.schema.integrity_message(str(exc))}") from None

    def _default(self, info: EntityInfo, column: str) -> Any:
        """A column a W0 row leaves out takes its default, as an insert by a tool would."""
        from envtrain.core.expr import Lit, Ref

        default = info.columns[column].default
        if isinstance(default, Lit) and not isinstance(default.value, tuple):
            return int(default.value) if isinstance(default.value, bool) else default.value
        if isinstance(default, Ref) and default.namespace == "now":
            return self.base_time
        return None

    def serialize(self) -> bytes:
        self.conn.execute('INSERT OR REPLACE INTO "__meta__" VALUES (?, ?), (?, ?)',
                          ("base_time", self.base_time, "action_index", self.action_index))
        return self.conn.serialize()

    def image(self) -> bytes:
        """The database's bytes as they are now, nothing written first: equal images hold equal
        content (the converse need not hold), which spares a content hash when they match."""
        return self.conn.serialize()

    @classmethod
    def deserialize(cls, schema: Schema, data: bytes) -> "World":
        world = cls(schema, sqlite3.connect(":memory:"), "1970-01-01T00:00:00Z")
        world.restore(data)
        return world

    def probe(self) -> "Probe":
        """Try writes and take them back: ``with world.probe(): ...`` rolls back rows, files and clock."""
        return Probe(self)

    def restore(self, data: bytes) -> None:
        """Reset to a snapshot: every table, every file and the clock.

        A fresh connection each time: SQLite 3.40 crashes when a statement prepared before an
        in-place deserialize shares a virtual table (json_each) with one prepared after it, and
        no statement may outlive the database it was prepared against anyway.
        """
        self.conn.close()
        self.conn = _connect()
        self.conn.deserialize(data)
        meta = dict(self.conn.execute('SELECT key, value FROM "__meta__"').fetchall())
        if meta.get("base_time") != self.base_time:
            self.base_time = meta["base_time"]
            self._base = parse_time(self.base_time)
            self._now = (-1, "")
        self.action_index = int(meta["action_index"])

    # -- time ---------------------------------------------------------------------------------

    def now(self) -> str:
        if self._now[0] != self.action_index:  # formatting a time costs more than a step's SQL
            self._now = (self.action_index, (self._base + timedelta(seconds=self.action_index)).strftime(ISO_SECONDS))
        return self._now[1]

    def tick(self) -> None:
        self.action_index += 1

    # -- reading ------------------------------------------------------------------------------

    def rows(self, entity: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Rows in key order; ``limit`` reads only the first ones (SQLite stops there, not Python)."""
        info = self.schema.resolve(entity)
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        cur = self.conn.execute(f'SELECT * FROM "{info.table}" ORDER BY "{info.spec.primary_key}"{tail}')
        shape = RowShape.of([(d[0], info.columns[d[0]]) for d in cur.description])
        return [shape.row(row) for row in cur]

    def files(self) -> dict[str, str]:
        return {row["path"]: row["content"] for row in self.rows(FILES)}

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {name: self.rows(name) for name in self.schema.entities if name != FILES}

    def content_hash(self) -> str:
        """sha256 over every table's rows in key order, files included; the clock is not content."""
        digest = hashlib.sha256()
        for name in sorted(self.schema.entities):
            info = self.schema.entities[name]
            digest.update(f"\x00{name}\x00".encode())
            rows = self.conn.execute(f'SELECT * FROM "{info.table}" ORDER BY "{info.spec.primary_key}"').fetchall()
            if rows:  # the same bytes as one update per row, in one call
                digest.update(("\n".join(map(repr, rows)) + "\n").encode())
        return digest.hexdigest()[:16]

    def close(self) -> None:
        self.conn.close()


def image_hash(schema: Schema, image: bytes) -> str:
    """The content hash of a world given as a database image (``serialize``, ``image``)."""
    world = World.deserialize(schema, image)
    try:
        return world.content_hash()
    finally:
        world.close()


class Probe:
    """A savepoint around tentative steps (the admission search tries hundreds from one world)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def __enter__(self) -> World:
        self.clock = self.world.action_index
        self.world.conn.execute("SAVEPOINT probe")
        return self.world

    def __exit__(self, *exc: object) -> None:
        self.world.conn.execute("ROLLBACK TO probe")
        self.world.conn.execute("RELEASE probe")
        self.world.action_index = self.clock
