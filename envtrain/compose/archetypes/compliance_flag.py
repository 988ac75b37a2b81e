"""Compliance flag: items with attribute combination C (a category value and a number above X) are
flagged. Distractors: an item with only one attribute of C (the value, or the number)."""

from __future__ import annotations

from envtrain.compose.archetypes.common import (
    Draw, Plan, Wording, any_numeric, both, categories, extra_attr, finish, has, is_, n_categories, not_, numerics,
    pick_exception, place_items, retry, thresholds,
)
from envtrain.compose.context import Unbuildable, display


def fits(card, exception: bool) -> bool:
    return n_categories(card) >= (2 if exception else 1) and any_numeric(card)


def plan(card, rows, rng, words: Wording, values: list[str], exception: bool) -> Plan:
    act = values[0]

    def attempt() -> Plan:
        cats, nums = categories(card, rng), numerics(card, rng)
        if not cats or not nums:
            raise Unbuildable("schema compatibility: no category and numeric column")
        col, num = cats[0], nums[0].name
        value = rng.choice([v for v, n in col.values if n >= 4] or [col.values[0][0]])
        exc = pick_exception(card, rng, exception, (col.name, num), second=True)
        need = has(col.name, num, exc[0]) if exc else has(col.name, num)
        draw = Draw([r for r in rows if need(r)], rng)  # every predicate below may read these columns
        plain = both(need, not_(*exc)) if exc else need
        xs = thresholds(Draw([r for r in rows if plain(r) and is_(col.name, value)(r)], rng), num, rng, above=4, below=0)
        if not xs:
            raise Unbuildable(f"schema compatibility: no threshold on {num} among rows whose {col.name} is {value}")
        x = xs[0]
        meets = both(plain, is_(col.name, value), lambda r: r[num] > x)
        groups = [
            (draw.take(3, meets, f"whose {col.name} is {value} with {num} above {display(x)}"), act, f"{col.name} is {value} and {num} above {display(x)}"),
            (draw.take(1, both(plain, is_(col.name, value), lambda r: r[num] == x), f"whose {col.name} is {value} with {num} at {display(x)}"),
             None, f"{num} exactly {display(x)}: not above"),
            (draw.take(1, both(plain, not_(col.name, value), lambda r: r[num] > x), f"whose {col.name} is not {value} with {num} above {display(x)}"),
             None, f"{col.name} is not {value}"),
        ]
        if exc:
            groups.append((draw.take(1, both(need, is_(col.name, value), lambda r: r[num] > x, is_(*exc)), f"meeting the rule with {exc[0]} {exc[1]}"),
                           None, f"exception: {exc[0]} is {exc[1]}"))
        outside = draw.take(1, meets, f"whose {col.name} is {value} with {num} above {display(x)}")
        items = place_items(card, groups, outside)
        used = [col.name, num] + ([exc[0]] if exc else [])
        attrs = used + extra_attr(card, [i.row for i in items], used, rng)
        text = (f"A {words.scoped} whose {col.name} is {value} and whose {num} is above {display(x)} must be handled: "
                f"{words.phrase(act)}. A {words.noun} that meets only one of the two conditions is left as it is.")
        if exc:
            text += f" So is a {words.noun} whose {exc[0]} is {exc[1]}, even when it meets both."
        return Plan(finish(items, rng), attrs, text, report_value=None,
                    params={"column": col.name, "value": value, "numeric": num, "threshold": x, "exception": exc})

    return retry("compliance flag", attempt)
