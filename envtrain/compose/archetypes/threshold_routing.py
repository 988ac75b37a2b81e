"""Threshold routing: items above X go to A, the others to B. Distractor: an item exactly at X."""

from __future__ import annotations

from envtrain.compose.archetypes.common import (
    Draw, Plan, Wording, any_numeric, both, extra_attr, finish, has, is_, n_categories, not_, numerics, pick_exception,
    place_items, retry, thresholds,
)
from envtrain.compose.context import Unbuildable, display


def fits(card, exception: bool) -> bool:
    return any_numeric(card) and (not exception or n_categories(card) >= 1)


def plan(card, rows, rng, words: Wording, values: list[str], exception: bool) -> Plan:
    first, second = values[0], values[1]

    def attempt() -> Plan:
        cols = numerics(card, rng)
        if not cols:
            raise Unbuildable("schema compatibility: no numeric column with five or more values")
        num = cols[0].name
        exc = pick_exception(card, rng, exception, (num,))
        need = has(num, exc[0]) if exc else has(num)
        draw = Draw([r for r in rows if need(r)], rng)  # every predicate below may read these columns
        xs = thresholds(Draw([r for r in rows if need(r)], rng), num, rng, above=5, below=3)
        if not xs:
            raise Unbuildable(f"schema compatibility: no threshold on {num} leaves rows on both sides")
        x = xs[0]
        plain = both(need, not_(*exc)) if exc else need
        over = draw.take(3, both(plain, lambda r: r[num] > x), f"with {num} above {display(x)}")
        under = draw.take(2, both(need, lambda r: r[num] < x), f"with {num} below {display(x)}")
        at = draw.take(1, both(need, lambda r: r[num] == x), f"with {num} at {display(x)}")
        outside = draw.take(1, both(plain, lambda r: r[num] > x), f"with {num} above {display(x)}")
        flipped = draw.take(1, both(is_(*exc), lambda r: r[num] > x), f"with {exc[0]} {exc[1]} above {display(x)}") if exc else []
        items = place_items(card, [(over, first, f"{num} above {display(x)}"), (under, second, f"{num} below {display(x)}"),
                                    (at, second, f"{num} exactly {display(x)}: not above"),
                                    (flipped, second, f"exception: {exc[0] if exc else ''} is {exc[1] if exc else ''}")], outside)
        used = [num] + ([exc[0]] if exc else [])
        attrs = used + extra_attr(card, [i.row for i in items], used, rng)
        text = (f"For every {words.scoped}: if its {num} is above {display(x)}, {words.phrase(first)}; "
                f"otherwise {words.phrase(second)}.")
        if exc:
            text += f" Exception: a {words.noun} whose {exc[0]} is {exc[1]} always gets the second treatment, whatever its {num}."
        return Plan(finish(items, rng), attrs, text, report_value=first,
                    params={"column": num, "threshold": x, "exception": exc})

    return retry("threshold routing", attempt)
