"""Budget quota: per group, act on items in key order until the next would take the group's total
above Q; that item and the later ones wait. Distractor: an item that overshoots by a little."""

from __future__ import annotations

from envtrain.compose.archetypes.common import (
    Draw, Plan, Wording, any_numeric, both, categories, extra_attr, finish, has, is_, make_items, n_categories, not_,
    numerics, pick_exception, retry,
)
from envtrain.compose.context import Unbuildable, display
from envtrain.compose.datacards import render_value


def fits(card, exception: bool) -> bool:
    return n_categories(card) >= (2 if exception else 1) and any_numeric(card, positive=True)


def plan(card, rows, rng, words: Wording, values: list[str], exception: bool) -> Plan:
    act = values[0]

    def attempt() -> Plan:
        cats = categories(card, rng)
        nums = numerics(card, rng, positive=True)
        if not cats or not nums:
            raise Unbuildable("schema compatibility: no category column and positive numeric column")
        group, amount = cats[0], nums[0].name
        exc = pick_exception(card, rng, exception, (group.name, amount), second=True)
        need = has(group.name, amount, exc[0]) if exc else has(group.name, amount)
        draw = Draw([r for r in rows if need(r)], rng)  # every predicate below may read these columns
        plain = both(need, not_(*exc)) if exc else need
        names = [v for v, n in group.values if n >= 4]
        if len(names) < 2:
            raise Unbuildable(f"schema compatibility: {group.name} has fewer than two groups of four rows")
        g1, g2 = rng.sample(names, 2)
        first = sorted(draw.take(4, both(plain, is_(group.name, g1)), f"in {group.name} {g1}"), key=lambda r: r["_pos"])
        second = sorted(draw.take(2, both(plain, is_(group.name, g2)), f"in {group.name} {g2}"), key=lambda r: r["_pos"])
        fit = rng.choice((1, 2))
        quota = render_value(sum(r[amount] for r in first[:fit]))  # the fit-th item lands exactly on the quota
        if quota is None:
            raise Unbuildable(f"schema compatibility: {amount} sums are not printable")
        skipped = []
        if exc:
            skipped = draw.take(1, both(need, is_(group.name, g1), is_(*exc)), f"in {group.name} {g1} with {exc[0]} {exc[1]}")
        outside = draw.take(1, both(plain, is_(group.name, g1)), f"in {group.name} {g1}")
        items = []
        for members in (first + skipped, second):
            total, stopped = 0.0, False
            for item in make_items(sorted(members, key=lambda r: r["_pos"]), card):
                if exc and display(item.row[exc[0]]) == exc[1]:
                    item.decision, item.why = None, f"exception: {exc[0]} is {exc[1]}, skipped"
                elif not stopped and total + item.row[amount] <= quota + 1e-9:
                    total += item.row[amount]
                    item.decision, item.why = act, f"{group.name} {display(item.row[group.name])} total {display(render_value(total))} within {display(quota)}"
                else:
                    stopped = True
                    item.decision, item.why = None, f"{group.name} {display(item.row[group.name])} would pass {display(quota)}: waits"
                items.append(item)
        if sum(i.decision is not None for i in items) < 2 or all(i.decision is not None for i in items):
            raise Unbuildable("schema compatibility: the quota leaves nothing to act on or nothing waiting")
        for item in make_items(outside, card, in_scope=False):
            item.why = "out of scope"
            items.append(item)
        used = [group.name, amount] + ([exc[0]] if exc else [])
        attrs = used + extra_attr(card, [i.row for i in items], used, rng)
        text = (f"Per {group.name}, go through the {words.scoped_plural} in order of their key and {words.phrase(act)}, "
                f"but only while the {group.name}'s total {amount} of handled {words.plural} stays at or below {display(quota)}. "
                f"The first {words.noun} that would take it above {display(quota)}, and every later one of the same {group.name}, waits: leave those as they are.")
        if exc:
            text += f" Skip any {words.noun} whose {exc[0]} is {exc[1]}: leave it as it is, and it does not count toward the total."
        return Plan(finish(items, rng), attrs, text, report_value=None,
                    params={"group": group.name, "amount": amount, "quota": quota, "exception": exc})

    return retry("budget quota", attempt)
