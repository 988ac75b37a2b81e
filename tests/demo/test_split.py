"""The held-out split: whole seed-skeleton families and whole lineages, never both sides."""

from __future__ import annotations

import pytest

from envtrain.demo.split import LeakageError, Member, Split, check, heldout_families, pick_roots, split


def _members() -> list[Member]:
    out = [Member(f"e{i}", f"f{i % 6}", f"e{i}") for i in range(30)]
    # two scaled lineages: e0 (family f0) and e1 (family f1), depths 1..3
    out += [Member(f"e{r}-{d}", f"f{r}", f"e{r}", d) for r in (0, 1) for d in (1, 2, 3)]
    return out


def test_families_and_lineages_stay_on_one_side() -> None:
    members = _members()
    held = frozenset({"f0", "f3"})
    s = split(members, held)
    assert {m.family for m in s.heldout} == {"f0", "f3"}
    assert not {m.family for m in s.train} & held
    assert {m.env_id for m in s.heldout if m.root == "e0"} == {"e0", "e0-1", "e0-2", "e0-3"}
    assert all(m.root != "e0" for m in s.train)
    assert {m.env_id for m in s.train if m.root == "e1"} == {"e1", "e1-1", "e1-2", "e1-3"}
    assert s.summary()["heldout_scaled"] == 3 and s.summary()["train_scaled"] == 3
    assert len(s.train) + len(s.heldout) == len(members)


def test_a_scaled_node_follows_its_root_even_if_labelled_otherwise() -> None:
    members = [Member("r", "fa", "r"), Member("c", "fb", "r", 1), Member("x", "fb", "x")]
    s = split(members, frozenset({"fa"}))
    assert {m.env_id for m in s.heldout} == {"r", "c"}


def test_check_names_a_planted_leak() -> None:
    s = Split(frozenset({"f1"}), train=[Member("a", "f1", "a")], heldout=[Member("b", "f1", "b")])
    with pytest.raises(LeakageError, match="family"):
        check(s)
    s = Split(frozenset(), train=[Member("a", "f1", "r")], heldout=[Member("b", "f2", "r", 2)])
    with pytest.raises(LeakageError, match="root"):
        check(s)


def test_heldout_choice_is_seeded_and_order_independent() -> None:
    families = [f"f{i}" for i in range(20)]
    a = heldout_families(families, 0.25, seed=3)
    assert a == heldout_families(list(reversed(families)) + families, 0.25, seed=3)
    assert len(a) == 5
    assert a != heldout_families(families, 0.25, seed=4)
    assert len(heldout_families(["x", "y"], 0.9, seed=0)) == 1  # never every family
    with pytest.raises(ValueError, match="two skeleton families"):
        heldout_families(["x"], 0.5, seed=0)


def test_roots_come_from_both_sides_one_per_family_first() -> None:
    candidates = {f"e{i}": f"f{i % 4}" for i in range(16)}
    held = frozenset({"f0"})
    roots = pick_roots(candidates, held, n_train=3, n_heldout=2, seed=0)
    train, heldout = roots[:3], roots[3:]
    assert all(candidates[e] != "f0" for e in train)
    assert len({candidates[e] for e in train}) == 3  # three families before any repeats
    assert all(candidates[e] == "f0" for e in heldout) and len(set(heldout)) == 2
