"""What every archetype shares: the plan it returns, row drawing, items, exception columns."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from envtrain.compose.atoms import ColumnCard, TableCard
from envtrain.compose.context import Item, Unbuildable, display
from envtrain.compose.datacards import Row, usable_category, usable_numeric

TRIES = 12  # column/threshold combinations an archetype tries before giving up on a table


@dataclass(frozen=True)
class Wording:
    """How the host and the rule-carrying action are named in the rule text."""

    noun: str  # "ticket"
    plural: str  # "tickets"
    scoped: str  # "open ticket"
    scoped_plural: str
    phrase: Callable[[str], str]  # value -> "escalate it to the billing team"


@dataclass
class Plan:
    """An instantiated rule: its text (for the carrier only), the items with their decisions."""

    items: list[Item]
    attrs: list[str]  # the columns each record shows, rule columns first
    text: str
    report_value: str | None  # the decision a report lists (None: every item acted on)
    reference: list[tuple[Item, Any]] | None = None  # reconciliation: (item, listed amount)
    today: str | None = None  # deadline escalation: the episode's date
    params: dict[str, Any] = field(default_factory=dict)


class Draw:
    """Distinct rows drawn at random from a table, each used once per environment."""

    def __init__(self, rows: list[Row], rng: random.Random) -> None:
        self.rows = rows
        self.rng = rng
        self.used: set[int] = set()

    def take(self, n: int, pred: Callable[[Row], bool], what: str) -> list[Row]:
        pool = [r for r in self.rows if r["_pos"] not in self.used and pred(r)]
        if len(pool) < n:
            raise Unbuildable(f"schema compatibility: the table has {len(pool)} rows {what}, the rule needs {n}")
        chosen = self.rng.sample(pool, n)
        self.used.update(r["_pos"] for r in chosen)
        return chosen

    def count(self, pred: Callable[[Row], bool]) -> int:
        return sum(1 for r in self.rows if r["_pos"] not in self.used and pred(r))


def prefix(dataset: str) -> str:
    letters = re.sub(r"[^A-Za-z]", "", dataset.split("/")[-1]).upper()
    return (letters + "XXX")[:3]


def make_items(rows: list[Row], card: TableCard, *, in_scope: bool = True) -> list[Item]:
    pre = prefix(card.dataset)
    entity = next((c.name for c in card.columns if c.kind == "entity"), None)
    items = []
    for row in rows:
        key = f"{pre}-{row['_pos']:05d}"
        label = row.get(entity) if entity else None
        label = str(label) if label is not None and len(str(label)) <= 40 else key
        items.append(Item(pos=row["_pos"], key=key, label=label, row=row, in_scope=in_scope))
    return items


def numerics(card: TableCard, rng: random.Random, *, positive: bool = False, fractional: bool = False) -> list[ColumnCard]:
    cols = [c for c in card.columns if usable_numeric(c)
            and (not positive or (c.minimum or 0) > 0) and (not fractional or c.fractional)]
    rng.shuffle(cols)
    return cols


def categories(card: TableCard, rng: random.Random, exclude: tuple[str, ...] = ()) -> list[ColumnCard]:
    cols = [c for c in card.columns if usable_category(c) and c.name not in exclude]
    rng.shuffle(cols)
    return cols


def is_(col: str, value: str) -> Callable[[Row], bool]:
    return lambda r: r.get(col) is not None and display(r[col]) == value


def not_(col: str, value: str) -> Callable[[Row], bool]:
    return lambda r: r.get(col) is not None and display(r[col]) != value


def has(*cols: str) -> Callable[[Row], bool]:
    return lambda r: all(r.get(c) is not None for c in cols)


def both(*preds: Callable[[Row], bool]) -> Callable[[Row], bool]:
    return lambda r: all(p(r) for p in preds)


def exception_options(card: TableCard, rng: random.Random, exclude: tuple[str, ...]) -> list[tuple[str, str]]:
    """(column, value) pairs an exception can name: a category value held by two rows or more."""
    out = []
    for col in categories(card, rng, exclude):
        values = [v for v, n in col.values if n >= 2]
        rng.shuffle(values)
        out.extend((col.name, v) for v in values[:2])
    return out


def extra_attr(card: TableCard, rows: list[Row], used: list[str], rng: random.Random) -> list[str]:
    """One more column the records show that the rule does not read, so the rule's columns are not
    the only ones on display (when every chosen row has a value there)."""
    options = [c.name for c in card.columns if c.kind in ("numeric", "category", "date") and c.name not in used]
    rng.shuffle(options)
    for name in options[:4]:
        if all(r.get(name) is not None for r in rows):
            return [name]
    return []


def thresholds(draw: Draw, col: str, rng: random.Random, *, above: int, below: int, at: int = 1) -> list[Any]:
    """Values X of ``col`` with at least ``above`` rows over X, ``below`` under it and ``at`` equal to it."""
    counts: dict[Any, int] = {}
    for r in draw.rows:
        v = r.get(col)
        if v is not None and r["_pos"] not in draw.used:
            counts[v] = counts.get(v, 0) + 1
    values = sorted(counts)
    prefix_sum, running = [], 0
    for v in values:
        prefix_sum.append(running)
        running += counts[v]
    total = running
    good = [v for v, lower in zip(values, prefix_sum)
            if counts[v] >= at and lower >= below and total - lower - counts[v] >= above]
    rng.shuffle(good)
    return good


def finish(items: list[Item], rng: random.Random) -> list[Item]:
    """Items in a shuffled order (the world's ids then carry no hint), keys distinct."""
    rng.shuffle(items)
    keys = [i.key for i in items]
    assert len(set(keys)) == len(keys)
    return items


def retry(what: str, attempt: Callable[[], Plan]) -> Plan:
    last = None
    for _ in range(TRIES):
        try:
            return attempt()
        except Unbuildable as exc:
            last = exc
    raise Unbuildable(last.reason if last else f"schema compatibility: {what}")


# -- quick checks of what a table offers (for choosing a table before planning) ----------------


def n_categories(card: TableCard) -> int:
    return sum(1 for c in card.columns if usable_category(c))


def any_numeric(card: TableCard, *, positive: bool = False, fractional: bool = False, distinct: int = 5) -> bool:
    return any(usable_numeric(c) and c.distinct >= distinct and (not positive or (c.minimum or 0) > 0)
               and (not fractional or c.fractional) for c in card.columns)


def any_date(card: TableCard) -> bool:
    return any(c.kind == "date" and c.distinct >= 5 for c in card.columns)


def pick_exception(card: TableCard, rng: random.Random, exception: bool, exclude: tuple[str, ...], *,
                   second: bool = False) -> tuple[str, str] | None:
    """The exception's (column, value) when the rule has one (``second``: a category column is already in use)."""
    if not exception:
        return None
    options = exception_options(card, rng, exclude)
    if not options:
        raise Unbuildable(f"schema compatibility: no {'second ' if second else ''}category column for the exception")
    return options[0]


def place_items(card: TableCard, groups, outside: list[Row]) -> list[Item]:
    """Items from (rows, decision, why) groups, in order, then the out-of-scope rows."""
    items = []
    for group, decision, why in groups:
        for item in make_items(group, card):
            item.decision, item.why = decision, why
            items.append(item)
    for item in make_items(outside, card, in_scope=False):
        item.why = "out of scope"
        items.append(item)
    return items
