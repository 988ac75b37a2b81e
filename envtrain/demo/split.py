"""A leak-free train / held-out split of composed and scaled environments.

The unit held out is the seed-skeleton family (a seed skeleton and every skeleton recombined from
it, LegoEnv §3.3): environments of one family share their workflow, rule shape and intents, so a
held-out environment whose family also trains would be a paraphrase, not a new task. A scaled
environment (RES) goes wherever its lineage root goes. ``check`` proves the result: no family and
no lineage root on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from envtrain.core.io import content_hash


@dataclass(frozen=True)
class Member:
    env_id: str
    family: str  # seed-skeleton hash
    root: str  # lineage root id (the environment itself for an unscaled one)
    depth: int = 0


@dataclass
class Split:
    heldout_families: frozenset[str]
    train: list[Member] = field(default_factory=list)
    heldout: list[Member] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        def count(members: list[Member], scaled: bool) -> int:
            return sum(1 for m in members if (m.depth > 0) == scaled)

        return {"train_original": count(self.train, False), "train_scaled": count(self.train, True),
                "heldout_original": count(self.heldout, False), "heldout_scaled": count(self.heldout, True),
                "train_families": len({m.family for m in self.train}), "heldout_families": len({m.family for m in self.heldout})}


class LeakageError(AssertionError):
    """The split puts one family or one lineage on both sides."""


def heldout_families(families: Iterable[str], share: float, seed: int) -> frozenset[str]:
    """A seeded, order-independent choice of round(share x families) families (at least one, never all)."""
    unique = sorted(set(families))
    if len(unique) < 2:
        raise ValueError(f"a split needs at least two skeleton families, got {len(unique)}; compose more environments")
    k = min(len(unique) - 1, max(1, round(share * len(unique))))
    ranked = sorted(unique, key=lambda f: content_hash([seed, f]))
    return frozenset(ranked[:k])


def split(members: Iterable[Member], held: frozenset[str]) -> Split:
    """Members of a held-out family, and every node of a lineage whose root is one, go to held-out."""
    members = list(members)
    root_family = {m.env_id: m.family for m in members if m.depth == 0}
    out = Split(heldout_families=held)
    for m in members:
        m = replace(m, family=root_family.get(m.root, m.family))  # a scaled node belongs to its root's family
        (out.heldout if m.family in held else out.train).append(m)
    check(out)
    return out


def check(s: Split) -> None:
    """Raise LeakageError when a family or a lineage root appears on both sides."""
    for attr in ("family", "root"):
        both = {getattr(m, attr) for m in s.train} & {getattr(m, attr) for m in s.heldout}
        if both:
            raise LeakageError(f"{len(both)} {attr} value(s) on both sides of the split, e.g. {sorted(both)[0]}")
    ids = {m.env_id for m in s.train} & {m.env_id for m in s.heldout}
    if ids:
        raise LeakageError(f"environment {sorted(ids)[0]} is on both sides of the split")


def pick_roots(candidates: Mapping[str, str], held: frozenset[str], n_train: int, n_heldout: int, seed: int) -> list[str]:
    """Environments to scale (env id -> family): n from each side, one per family before any family repeats."""
    def side(want_held: bool, n: int) -> list[str]:
        pool = sorted((content_hash([seed, "root", e]), f, e) for e, f in candidates.items() if (f in held) == want_held)
        picked: list[str] = []
        used: set[str] = set()
        for round_ in range(2):  # first one per family, then fill from the rest
            for _, family, env_id in pool:
                if len(picked) == n:
                    return picked
                if env_id in picked or (round_ == 0 and family in used):
                    continue
                used.add(family)
                picked.append(env_id)
        return picked

    return side(False, n_train) + side(True, n_heldout)


__all__ = ["LeakageError", "Member", "Split", "check", "heldout_families", "pick_roots", "split"]
