"""Tiering: value bands map to tiers T1..T3. Distractors: values exactly on the band edges."""

from __future__ import annotations

from envtrain.compose.archetypes.common import (
    Draw, Plan, Wording, any_numeric, both, extra_attr, finish, has, is_, n_categories, not_, numerics, pick_exception,
    place_items, retry,
)
from envtrain.compose.context import Unbuildable, display


def fits(card, exception: bool) -> bool:
    return any_numeric(card, distinct=7) and (not exception or n_categories(card) >= 1)


def _edges(rows, col, rng, tries: int = 40):
    """Random (low, high) band edges, each a value some row holds, with rows below, between and above."""
    counts = {}
    for r in rows:
        counts[r[col]] = counts.get(r[col], 0) + 1
    values = sorted(counts)
    below, lower = 0, {}
    for v in values:
        lower[v] = below
        below += counts[v]
    total = below
    lows = [i for i, v in enumerate(values) if lower[v] >= 2]
    out = []
    for _ in range(tries if lows else 0):
        i = rng.choice(lows)
        highs = [j for j in range(i + 2, min(len(values), i + 60)) if total - lower[values[j]] - counts[values[j]] >= 3]
        if highs:  # at least one value strictly between the edges
            out.append((values[i], values[rng.choice(highs)]))
            break
    return out


def plan(card, rows, rng, words: Wording, values: list[str], exception: bool) -> Plan:
    t1, t2, t3 = values[:3]

    def attempt() -> Plan:
        cols = [c for c in numerics(card, rng) if c.distinct >= 7]
        if not cols:
            raise Unbuildable("schema compatibility: no numeric column with seven or more values")
        num = cols[0].name
        exc = pick_exception(card, rng, exception, (num,))
        need = has(num, exc[0]) if exc else has(num)
        draw = Draw([r for r in rows if need(r)], rng)  # every predicate below may read these columns
        edges = _edges([r for r in rows if need(r)], num, rng)
        if not edges:
            raise Unbuildable(f"schema compatibility: {num} has too few values for three bands")
        low, high = edges[0]
        plain = both(need, not_(*exc)) if exc else need
        groups = [
            (draw.take(2, both(plain, lambda r: r[num] < low), f"with {num} below {display(low)}"), t1, f"{num} below {display(low)}"),
            (draw.take(1, both(plain, lambda r: r[num] == low), f"with {num} at {display(low)}"), t2, f"{num} exactly {display(low)}: second band"),
            (draw.take(1, both(plain, lambda r: low < r[num] < high), "between the edges"), t2, f"{num} in the second band"),
            (draw.take(1, both(plain, lambda r: r[num] == high), f"with {num} at {display(high)}"), t3, f"{num} exactly {display(high)}: third band"),
            (draw.take(1, both(plain, lambda r: r[num] > high), f"with {num} above {display(high)}"), t3, f"{num} above {display(high)}"),
        ]
        if exc:
            groups.append((draw.take(1, both(need, is_(*exc), lambda r: r[num] >= low), f"with {exc[0]} {exc[1]}"), t1,
                           f"exception: {exc[0]} is {exc[1]}"))
        outside = draw.take(1, both(plain, lambda r: r[num] > high), f"with {num} above {display(high)}")
        items = place_items(card, groups, outside)
        used = [num] + ([exc[0]] if exc else [])
        attrs = used + extra_attr(card, [i.row for i in items], used, rng)
        text = (f"Give every {words.scoped} a tier from its {num}: below {display(low)}, {words.phrase(t1)}; "
                f"from {display(low)} up to but not including {display(high)}, {words.phrase(t2)}; "
                f"{display(high)} or more, {words.phrase(t3)}.")
        if exc:
            text += f" Exception: a {words.noun} whose {exc[0]} is {exc[1]} always gets the first tier ({words.phrase(t1)})."
        return Plan(finish(items, rng), attrs, text, report_value=t3,
                    params={"column": num, "edges": [low, high], "exception": exc})

    return retry("tiering", attempt)
