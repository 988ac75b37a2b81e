"""Exclusion: act on every in-scope item except those with property P. Distractor: a P item that
otherwise qualifies. Exception: a P item whose number is above X is handled after all."""

from __future__ import annotations

from envtrain.compose.archetypes.common import (
    Draw, Plan, Wording, any_numeric, both, categories, extra_attr, finish, has, is_, n_categories, not_, numerics,
    place_items, retry, thresholds,
)
from envtrain.compose.context import Unbuildable, display


def fits(card, exception: bool) -> bool:
    return n_categories(card) >= 1 and (not exception or any_numeric(card))


def plan(card, rows, rng, words: Wording, values: list[str], exception: bool) -> Plan:
    act = values[0]

    def attempt() -> Plan:
        cats = categories(card, rng)
        if not cats:
            raise Unbuildable("schema compatibility: no category column")
        col = cats[0]
        prop = rng.choice([v for v, n in col.values if n >= 3] or [col.values[0][0]])
        num = x = None
        if exception:
            nums = numerics(card, rng)
            if not nums:
                raise Unbuildable("schema compatibility: no numeric column for the exception")
            num = nums[0].name
            xs = thresholds(Draw([r for r in rows if is_(col.name, prop)(r) and r.get(num) is not None], rng), num, rng,
                            above=1, below=1)
            if not xs:
                raise Unbuildable(f"schema compatibility: no threshold on {num} among rows whose {col.name} is {prop}")
            x = xs[0]
        need = has(col.name, num) if num else has(col.name)
        draw = Draw([r for r in rows if need(r)], rng)  # every predicate below may read these columns
        acted = draw.take(4, both(need, not_(col.name, prop)), f"whose {col.name} is not {prop}")
        outside = draw.take(1, both(need, not_(col.name, prop)), f"whose {col.name} is not {prop}")
        if num is None:
            kept = draw.take(2, both(need, is_(col.name, prop)), f"whose {col.name} is {prop}")
            groups = [(kept, None, f"{col.name} is {prop}: excluded")]
        else:
            flipped = draw.take(1, both(need, is_(col.name, prop), lambda r: r[num] > x), f"whose {col.name} is {prop}, {num} above {display(x)}")
            at = draw.take(1, both(need, is_(col.name, prop), lambda r: r[num] == x), f"whose {col.name} is {prop}, {num} at {display(x)}")
            under = draw.take(1, both(need, is_(col.name, prop), lambda r: r[num] < x), f"whose {col.name} is {prop}, {num} below {display(x)}")
            groups = [(flipped, act, f"exception: {num} above {display(x)}"),
                      (at + under, None, f"{col.name} is {prop} and {num} not above {display(x)}")]
        items = place_items(card, [(acted, act, f"{col.name} is not {prop}")] + groups, outside)
        used = [col.name] + ([num] if num else [])
        attrs = used + extra_attr(card, [i.row for i in items], used, rng)
        text = (f"For every {words.scoped}, {words.phrase(act)}, except a {words.noun} whose {col.name} is {prop}: "
                f"leave those untouched.")
        if num:
            text += f" Exception: a {words.noun} whose {col.name} is {prop} but whose {num} is above {display(x)} is handled like the others."
        return Plan(finish(items, rng), attrs, text, report_value=None,
                    params={"column": col.name, "excluded": prop, "exception": [num, x] if num else None})

    return retry("exclusion", attempt)
