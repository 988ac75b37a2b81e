"""Reconciliation: each in-scope item is compared with its line in a reference list by key and
amount; a difference of one or more is a mismatch and is acted on. Distractor: a near-match off by
rounding. The listed amount of a mismatch is a real value of another row of the same table."""

from __future__ import annotations

from envtrain.compose.archetypes.common import (
    Draw, Plan, Wording, any_numeric, both, extra_attr, finish, has, is_, make_items, n_categories, not_, numerics,
    pick_exception, retry,
)
from envtrain.compose.context import Unbuildable


def fits(card, exception: bool) -> bool:
    return any_numeric(card, fractional=True, distinct=6) and (not exception or n_categories(card) >= 1)


def plan(card, rows, rng, words: Wording, values: list[str], exception: bool) -> Plan:
    act = values[0]

    def attempt() -> Plan:
        nums = [c for c in numerics(card, rng, fractional=True) if (c.maximum or 0) - (c.minimum or 0) >= 5]
        if not nums:
            raise Unbuildable("schema compatibility: no fractional numeric column with a range of five or more")
        amount = nums[0].name
        exc = pick_exception(card, rng, exception, (amount,))
        need = has(amount, exc[0]) if exc else has(amount)
        draw = Draw([r for r in rows if need(r)], rng)  # every predicate below may read these columns
        plain = both(need, not_(*exc)) if exc else need
        fractional = lambda r: isinstance(r[amount], float) and abs(r[amount] - round(r[amount])) >= 0.01  # noqa: E731
        matches = draw.take(3, plain, "with an amount")
        near = draw.take(1, both(plain, fractional), f"with a fractional {amount}")
        mismatched = draw.take(2, plain, "with an amount")
        exempt = draw.take(1, both(need, is_(*exc)), f"with {exc[0]} {exc[1]}") if exc else []
        outside = draw.take(1, plain, "with an amount")
        donors = [r[amount] for r in draw.rows if r.get(amount) is not None]
        reference, items = [], []

        def listed_far(value):
            far = [v for v in donors if abs(v - value) >= 1.5]
            if not far:
                raise Unbuildable(f"schema compatibility: no other value of {amount} differs enough")
            return rng.choice(far)

        for group, kind in ((matches, "match"), (near, "near"), (mismatched, "mismatch"), (exempt, "exempt"), (outside, "outside")):
            for item in make_items(group, card, in_scope=kind != "outside"):
                value = item.row[amount]
                if kind == "match":
                    listed, item.decision, item.why = value, None, "matches the reference"
                elif kind == "near":
                    listed, item.decision, item.why = int(round(value)), None, "differs by rounding only"
                elif kind == "exempt":
                    listed, item.decision, item.why = listed_far(value), None, f"mismatch, but {exc[0]} is {exc[1]}"
                elif kind == "outside":
                    listed, item.why = listed_far(value), "out of scope"
                else:
                    listed, item.decision, item.why = listed_far(value), act, "differs from the reference by one or more"
                reference.append((item, listed))
                items.append(item)
        reference.sort(key=lambda pair: pair[0].key)
        used = [amount] + ([exc[0]] if exc else [])
        attrs = used + extra_attr(card, [i.row for i in items], used, rng)
        text = (f"Compare every {words.scoped} with its line in {{reference}}: if its {amount} differs from the listed value "
                f"by one or more, it is a mismatch: {words.phrase(act)}. A difference smaller than one is rounding, not a "
                f"mismatch; leave matching {words.plural} as they are.")
        if exc:
            text += f" Leave a mismatched {words.noun} whose {exc[0]} is {exc[1]} as it is too."
        return Plan(finish(items, rng), attrs, text, report_value=None, reference=reference,
                    params={"amount": amount, "exception": exc})

    return retry("reconciliation", attempt)
