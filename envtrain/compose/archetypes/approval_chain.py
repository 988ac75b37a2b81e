"""Approval chain: act only on items approved by the junior or the senior role; an item above X
needs the senior role. Distractor: an item above X approved by the junior role (the wrong role).

The approver of each item is mapped from a real category column: its values, most frequent first,
become the roles below, so records that share a value share an approver.
"""

from __future__ import annotations

from envtrain.compose.archetypes.common import (
    Draw, Plan, Wording, any_numeric, both, categories, extra_attr, finish, is_, n_categories, not_, numerics,
    pick_exception, place_items, retry, thresholds,
)
from envtrain.compose.context import Unbuildable, display

ROLES = ("team lead", "finance director", "requester")
APPROVER = "approved by"


def fits(card, exception: bool) -> bool:
    return n_categories(card) >= (2 if exception else 1) and any_numeric(card)


def plan(card, rows, rng, words: Wording, values: list[str], exception: bool) -> Plan:
    act = values[0]
    junior, senior, other = ROLES

    def attempt() -> Plan:
        cats = categories(card, rng)
        nums = numerics(card, rng)
        if not cats or not nums:
            raise Unbuildable("schema compatibility: no category and numeric column")
        col, num = cats[0], nums[0].name
        roles = {value: ROLES[i] for i, value in enumerate([v for v, n in col.values if n >= 2][:len(ROLES)])}
        exc = pick_exception(card, rng, exception, (col.name, num), second=True)
        # rows are shared with the data pool's cache: the approver goes on a copy
        mapped = [dict(r, **{APPROVER: roles[display(r[col.name])]}) for r in rows
                  if r.get(col.name) is not None and r.get(num) is not None and display(r[col.name]) in roles
                  and (exc is None or r.get(exc[0]) is not None)]
        draw = Draw(mapped, rng)
        xs = thresholds(Draw([r for r in mapped if r[APPROVER] == junior], rng), num, rng, above=1, below=1)
        if not xs:
            raise Unbuildable(f"schema compatibility: no threshold on {num} for the {junior}'s items")
        x = xs[0]
        by = lambda role: (lambda r: r[APPROVER] == role)  # noqa: E731
        plain = not_(*exc) if exc else (lambda r: True)
        groups = [
            (draw.take(1, both(by(senior), lambda r: r[num] > x), f"approved by the {senior} above {display(x)}"), act, f"{senior} approved"),
            (draw.take(1, by(senior), f"approved by the {senior}"), act, f"{senior} approved"),
            (draw.take(1, both(by(junior), lambda r: r[num] < x), f"approved by the {junior} below {display(x)}"), act, f"{junior} approved, {num} not above {display(x)}"),
            (draw.take(1, both(by(junior), lambda r: r[num] == x), f"approved by the {junior} at {display(x)}"), act, f"{junior} approved, {num} exactly {display(x)}"),
            (draw.take(1, both(by(junior), plain, lambda r: r[num] > x), f"approved by the {junior} above {display(x)}"), None,
             f"{num} above {display(x)} needs the {senior}"),
        ]
        if other in roles.values():
            groups.append((draw.take(1, both(by(other), plain), f"approved by the {other}"), None, f"approved by the {other}: not an approver"))
        if exc:
            groups.append((draw.take(1, both(by(junior), lambda r: r[num] > x, is_(*exc)),
                                     f"above {display(x)} with {exc[0]} {exc[1]}"), act, f"exception: {exc[0]} is {exc[1]}"))
        outside = draw.take(1, by(senior), f"approved by the {senior}")
        items = place_items(card, groups, outside)
        used = [APPROVER, num] + ([exc[0]] if exc else [])
        attrs = used + extra_attr(card, [i.row for i in items], used + [col.name], rng)
        text = (f"Only a {words.scoped} approved by the {junior} or the {senior} may be handled: {words.phrase(act)}. "
                f"A {words.noun} whose {num} is above {display(x)} needs the {senior}'s approval; the {junior}'s is not enough. "
                f"Leave every other {words.noun} as it is.")
        if exc:
            text += f" A {words.noun} whose {exc[0]} is {exc[1]} needs no approval at all."
        return Plan(finish(items, rng), attrs, text, report_value=None,
                    params={"approver_column": col.name, "roles": roles, "column": num, "threshold": x, "exception": exc})

    return retry("approval chain", attempt)
