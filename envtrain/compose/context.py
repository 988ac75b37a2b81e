"""What a build accumulates: W0's rows and files, π, V+ and V−, and the texts the agent is told.

Hosts (compose/hosts/) and archetypes (compose/archetypes/) write into one ``BuildContext``;
``builder.py`` turns it into an ``Environment``. Every record comes from a dataset row (an
``Item``) or is scaffolding (containers, the persona, role addresses), never an invented record.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from envtrain.core.condition import Assertion, parse_cardinality
from envtrain.core.expr import Clause, Lit
from envtrain.compose.datacards import Row, format_number

ISO = "%Y-%m-%dT%H:%M:%SZ"
DEFAULT_BASE = "2026-03-02T09:00:00Z"  # a Monday morning


class Unbuildable(Exception):
    """The skeleton cannot be built on this data; ``reason`` is counted in the run report."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Item:
    """One dataset row as a record of the host app, with the rule's decision about it."""

    pos: int  # 1-based row number in the dataset table
    key: str  # the record's key as the agent sees it, e.g. WAG-00017 (fixed width: no key contains another)
    label: str  # a readable name: an entity column's value, else the key
    row: Row
    in_scope: bool = True  # out of scope: fails the scope clause (another status, list or folder)
    decision: str | None = None  # the value the rule's write takes for it; None: leave it untouched
    why: str = ""  # the clause that decided it, for assertion names
    rid: Any = None  # its primary key in the host app (set when seeded)
    extra: dict[str, Any] = field(default_factory=dict)  # host bookkeeping (sheet row, path, sender)


def display(value: Any) -> str:
    """A rendered value as text, the way records and carriers show it."""
    return format_number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def clause(column: str, op: str, value: Any = None) -> Clause:
    """A typed clause (no text round trip, so quotes in data values need no escaping)."""
    if op in ("is null", "is not null"):
        return Clause(column, op, None)
    return Clause(column, op, Lit(tuple(value) if isinstance(value, list) else value))


def slug(text: str, limit: int = 24) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return words[:limit].strip("-") or "records"


class BuildContext:
    def __init__(self, rng: random.Random, *, dataset: str, title: str) -> None:
        self.rng = rng
        self.dataset = dataset
        self.title = title
        self.domain = f"{slug(dataset.split('/')[-1], 20)}.example"
        self.base_time = DEFAULT_BASE
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.files: dict[str, str] = {}
        self.calls: list[dict[str, Any]] = []
        self.positive: list[Assertion] = []
        self.negative: list[Assertion] = []
        self.check_kinds: dict[str, int] = {}
        self.stated: list[str] = []  # carrier and reference texts (the request is added by the builder)
        self.persona: dict[str, Any] = {"email": self.email("operations"), "role": "operations analyst"}
        self.scaffold: dict[str, dict[str, Any]] = {}  # per app: containers and ids made once
        self._ids: dict[str, int] = {}

    # -- identities and time -------------------------------------------------------------

    def short(self, limit: int) -> str:
        """The dataset's title cut at a word boundary (names of workbooks, boards, spaces)."""
        if len(self.title) <= limit:
            return self.title
        cut = self.title[:limit].rsplit(" ", 1)[0]
        return cut.rstrip(" ,;:-(") or self.title[:limit]

    @property
    def short_title(self) -> str:
        return self.short(40)

    def email(self, role: str) -> str:
        return f"{role}@{self.domain}"

    def time(self, *, days: float = 0, hours: float = 0) -> str:
        base = datetime.strptime(self.base_time, ISO).replace(tzinfo=timezone.utc)
        return (base + timedelta(days=days, hours=hours)).strftime(ISO)

    def date(self, *, days: float = 0) -> str:
        return self.time(days=days)[:10]

    # -- W0 ------------------------------------------------------------------------------

    def next_id(self, entity: str) -> int:
        self._ids[entity] = self._ids.get(entity, 0) + 1
        return self._ids[entity]

    def add(self, entity: str, row: dict[str, Any], *, key: str | None = "id") -> dict[str, Any]:
        """Add a W0 row; an integer id is assigned when the entity is keyed by ``id`` and none is given."""
        if key == "id" and "id" not in row:
            row = {"id": self.next_id(entity), **row}
        self.tables.setdefault(entity, []).append(row)
        return row

    def app_state(self, app: str) -> dict[str, Any] | None:
        return self.scaffold.get(app)

    # -- π -------------------------------------------------------------------------------

    def call(self, tool: str, **arguments: Any) -> None:
        self.calls.append({"tool": tool, "arguments": {k: v for k, v in arguments.items() if v is not None}})

    # -- V -------------------------------------------------------------------------------

    def expect(self, kind: str, name: str, entity: str, where: list[Clause], count: str = "= 1") -> None:
        """A V+ assertion of verifier kind ``kind``."""
        self.positive.append(Assertion(name=name, entity=entity, where=tuple(where), count=parse_cardinality(count)))
        self.check_kinds[kind] = self.check_kinds.get(kind, 0) + 1

    def forbid(self, kind: str, name: str, entity: str, where: list[Clause], count: str = "= 1") -> None:
        """A V− assertion: holds on W0 and must still hold after the agent acts."""
        self.negative.append(Assertion(name=name, entity=entity, where=tuple(where), count=parse_cardinality(count)))
        self.check_kinds[kind] = self.check_kinds.get(kind, 0) + 1


def details(item: Item, attrs: list[str], sep: str = "\n") -> str:
    """The item's attributes as the record shows them: one ``column: value`` per line."""
    return sep.join(f"{a}: {display(item.row[a])}" for a in attrs)
