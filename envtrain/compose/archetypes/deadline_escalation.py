"""Deadline escalation: in-scope items whose date is more than D days before today are escalated.
Distractor: an item exactly D days old. Exception: an overdue item with a given category value."""

from __future__ import annotations

from datetime import date, timedelta

from envtrain.compose.archetypes.common import (
    Draw, Plan, Wording, any_date, both, extra_attr, finish, has, is_, n_categories, not_, pick_exception, place_items,
    retry, thresholds,
)
from envtrain.compose.context import Unbuildable

DAYS = (3, 5, 7, 14, 30)


def fits(card, exception: bool) -> bool:
    return any_date(card) and (not exception or n_categories(card) >= 1)


def plan(card, rows, rng, words: Wording, values: list[str], exception: bool) -> Plan:
    act = values[0]

    def attempt() -> Plan:
        dates = [c for c in card.columns if c.kind == "date" and c.distinct >= 5]
        if not dates:
            raise Unbuildable("schema compatibility: no date column")
        col = rng.choice(dates).name
        exc = pick_exception(card, rng, exception, (col,))
        need = has(col, exc[0]) if exc else has(col)
        draw = Draw([r for r in rows if need(r)], rng)  # every predicate below may read these columns
        bounds = thresholds(Draw([r for r in rows if need(r)], rng), col, rng, above=2, below=5 if exc else 4)
        if not bounds:
            raise Unbuildable(f"schema compatibility: no date of {col} leaves rows before and after it")
        boundary = bounds[0]
        days = rng.choice(DAYS)
        today = (date.fromisoformat(boundary) + timedelta(days=days)).isoformat()
        plain = both(need, not_(*exc)) if exc else need
        overdue = draw.take(3, both(plain, lambda r: r[col] < boundary), f"with {col} before {boundary}")
        recent = draw.take(2, both(need, lambda r: r[col] > boundary), f"with {col} after {boundary}")
        at = draw.take(1, both(need, lambda r: r[col] == boundary), f"with {col} on {boundary}")
        outside = draw.take(1, both(plain, lambda r: r[col] < boundary), f"with {col} before {boundary}")
        exempt = draw.take(1, both(is_(*exc), lambda r: r[col] < boundary), f"overdue with {exc[0]} {exc[1]}") if exc else []
        items = place_items(card, [(overdue, act, f"{col} more than {days} days ago"),
                                    (recent, None, f"{col} less than {days} days ago"),
                                    (at, None, f"{col} exactly {days} days ago: not more"),
                                    (exempt, None, f"exception: {exc[0] if exc else ''} is {exc[1] if exc else ''}")], outside)
        used = [col] + ([exc[0]] if exc else [])
        attrs = used + extra_attr(card, [i.row for i in items], used, rng)
        text = (f"A {words.scoped} whose {col} is more than {days} days before today is overdue: {words.phrase(act)}. "
                f"Leave every {words.noun} that is not overdue as it is.")
        if exc:
            text += f" An overdue {words.noun} whose {exc[0]} is {exc[1]} is exempt: leave it as it is too."
        return Plan(finish(items, rng), attrs, text, report_value=None, today=today,
                    params={"column": col, "days": days, "today": today, "exception": exc})

    return retry("deadline escalation", attempt)
