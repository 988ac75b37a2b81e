"""Skeletons: each structural constraint named when broken, the seeds, recombination, App. H rates."""

from __future__ import annotations

import random

import pytest

from envtrain.core.errors import SpecError
from envtrain.compose.skeleton import (
    CONSTRAINTS, Skeleton, SkeletonError, constraint_rates, load_seeds, recombine, validate, violations,
)

GOOD = {"domain": "support", "apps": ["helpdesk", "mail"],
        "intents": [{"app": "helpdesk", "kind": "escalate ticket"}, {"app": "mail", "kind": "send email"}],
        "rule": {"archetype": "threshold routing", "carrier": "policy mail"},
        "chain": "read the policy mail; escalate; email the list", "source": "a test"}


def skeleton(**changes) -> Skeleton:
    return Skeleton.model_validate({**GOOD, **changes})


def test_a_good_skeleton_passes(pool, data) -> None:
    assert violations(skeleton(), pool, data.cards) == []
    assert validate(skeleton(), pool, data.cards).domain == "support"


@pytest.mark.parametrize("changes, constraint, words", [
    ({"intents": [*GOOD["intents"], {"app": "helpdesk", "kind": "send email"}]}, "tool coverage",
     "no tool of helpdesk implements 'send email'"),
    ({"intents": [*GOOD["intents"], {"app": "crm", "kind": "add note"}]}, "tool coverage", "not in S"),
    ({"rule": {"archetype": "threshold routing", "carrier": "policy sheet"}}, "carrier hosting", "no server in S hosts a policy sheet"),
    ({"dataset": "datasets/warpbreaks", "rule": {"archetype": "reconciliation", "carrier": "policy mail"}}, "schema compatibility",
     "cannot support reconciliation"),
    ({"dataset": "nope/none"}, "schema compatibility", "has no usable table"),
    ({"intents": [{"app": "mail", "kind": "send email"}]}, "rule attachment", "no intent can carry"),
    ({"intents": [{"app": "helpdesk", "kind": "add comment"}], "rule": {"archetype": "tiering", "carrier": "policy mail"}},
     "rule attachment", "routing write"),
])
def test_each_violation_is_named(pool, data, changes, constraint, words) -> None:
    found = violations(skeleton(**changes), pool, data.cards)
    assert [v.constraint for v in found] == [constraint]
    assert words in found[0].message
    with pytest.raises(SkeletonError, match=f"^skeleton 'support': {constraint}: "):
        validate(skeleton(**changes), pool, data.cards)


def test_unknown_names_are_bad_input_not_a_constraint(pool) -> None:
    with pytest.raises(SpecError, match="unknown app 'erp'"):
        violations(skeleton(apps=["erp"]), pool)
    with pytest.raises(SpecError, match="unknown operation kind 'teleport'"):
        violations(skeleton(intents=[{"app": "helpdesk", "kind": "teleport"}]), pool)


def test_the_bundled_seeds(pool, data) -> None:
    seeds = load_seeds(pool, data.cards)
    assert len(seeds) >= 60
    assert len({s.hash for s in seeds}) == len(seeds)
    assert {s.rule.archetype for s in seeds} == {r.archetype for r in pool.rules}
    assert len({a for s in seeds for a in s.apps}) == 12  # every built-in app, inventory included
    for s in seeds:
        assert s.chain and "\n" not in s.chain and len(s.source.split()) >= 5


def test_recombination_keeps_only_valid_distinct_skeletons(pool, data) -> None:
    seeds = load_seeds(pool, data.cards)
    stats: dict = {}
    children = recombine(seeds, pool, random.Random(3), 60, data.cards, stats)
    assert 0 < len(children) <= 60 and stats["valid"] == len(children)
    rejected = stats["tried"] - stats["valid"] - stats["duplicates"]
    assert rejected >= 0 and sum(stats["violations"].values()) >= rejected
    hashes = {s.hash for s in seeds}
    for child in children:
        assert violations(child, pool, data.cards) == []
        assert child.hash not in hashes
        hashes.add(child.hash)
        assert child.source.startswith("recombined from seed")
    assert recombine(seeds, pool, random.Random(3), 60, data.cards) == children  # deterministic


def test_random_skeleton_rates(pool, data) -> None:
    rates = constraint_rates(pool, list(data.cards.values()), n=400, seed=1)
    assert set(rates["satisfied"]) == set(CONSTRAINTS)
    assert rates["satisfied"]["tool coverage"] == 1.0  # kinds are drawn from what each server implements
    assert 0 < rates["all four (every intent carries the rule)"] <= rates["all four (one intent carries the rule)"] < 0.5
