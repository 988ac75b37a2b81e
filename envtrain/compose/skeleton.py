"""Skeletons σ = (S, I, r, d) and the four structural constraints (LegoEnv §3.3, App. C, App. H).

- tool coverage: every intent's operation kind is implemented by a tool of its server in S;
- carrier hosting: some server in S hosts the carrier of r;
- schema compatibility: d supports the archetype of r (with d unset: some pooled table does);
- rule attachment: some intent in I can carry r (an action intent; a routing archetype needs a
  write that takes one of several values).

Seeds are data (``data/seeds.yaml``); recombination edits them (replace an intent, replace the rule,
add an atom) and keeps only valid, deduplicated results.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envtrain.core.errors import SpecError
from envtrain.core.io import content_hash
from envtrain.compose.atoms import AtomPool, RuleAtom
from envtrain.compose.vocabulary import ARCHETYPES, CARRIERS, read_data

CONSTRAINTS = ("tool coverage", "carrier hosting", "schema compatibility", "rule attachment")
MAX_APPS = 6


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class IntentRef(_Data):
    app: str
    kind: str


class RuleRef(_Data):
    archetype: str
    carrier: str
    exception: bool = False


class Skeleton(_Data):
    domain: str
    apps: tuple[str, ...] = Field(min_length=1, max_length=MAX_APPS)
    intents: tuple[IntentRef, ...] = Field(min_length=1)
    rule: RuleRef
    dataset: str | None = None  # "package/item"; None: the builder picks a supporting table
    n_distractors_min: int = 1
    chain: str  # one line, from reading the carrier to the last write
    source: str  # the documented workflow it was mined from, in words, or the seed it was recombined from
    origin: str | None = None  # hash of the seed it was recombined from; None for a seed (not part of the hash)

    @property
    def structure(self) -> dict[str, Any]:
        """What makes two skeletons the same composition (chain and source are commentary)."""
        return {"apps": sorted(self.apps), "intents": sorted((i.app, i.kind) for i in self.intents),
                "rule": self.rule.model_dump(), "dataset": self.dataset}

    @property
    def hash(self) -> str:
        return content_hash(self.structure)

    @property
    def family(self) -> str:
        """The seed skeleton this one is, or was recombined from: the unit a leak-free split holds out."""
        return self.origin or self.hash


@dataclass(frozen=True)
class Violation:
    constraint: str  # one of CONSTRAINTS
    message: str

    def __str__(self) -> str:
        return f"{self.constraint}: {self.message}"


class SkeletonError(SpecError):
    """A skeleton breaks a structural constraint; the message starts with the constraint's name."""


def check_names(sk: Skeleton, pool: AtomPool) -> None:
    """Bad input, not a constraint: names that are in no pool."""
    for app in sk.apps:
        if app not in pool.servers:
            raise SpecError(f"skeleton {sk.domain!r}: unknown app {app!r} (apps: {', '.join(sorted(pool.servers))})")
    for intent in sk.intents:
        pool.vocabulary.kind(intent.kind)
    if sk.rule.archetype not in ARCHETYPES:
        raise SpecError(f"skeleton {sk.domain!r}: unknown archetype {sk.rule.archetype!r} (archetypes: {', '.join(ARCHETYPES)})")
    if sk.rule.carrier not in CARRIERS:
        raise SpecError(f"skeleton {sk.domain!r}: unknown carrier {sk.rule.carrier!r} (carriers: {', '.join(CARRIERS)})")


def violations(sk: Skeleton, pool: AtomPool, cards: dict[str, Any] | None = None,
               *, every_intent: bool = False) -> list[Violation]:
    """Every violated constraint, in the order of CONSTRAINTS. ``cards``: dataset -> TableCard
    (schema compatibility is skipped without them). ``every_intent``: the stricter reading of rule
    attachment in which every action intent must carry the rule."""
    check_names(sk, pool)
    out = []
    for intent in sk.intents:
        if intent.app not in sk.apps:
            out.append(Violation("tool coverage", f"intent {intent.kind!r} is on {intent.app}, which is not in S"))
        elif not pool.servers[intent.app].implements(intent.kind):
            out.append(Violation("tool coverage", f"no tool of {intent.app} implements {intent.kind!r}"))
    hosts = pool.vocabulary.carrier_hosts(sk.rule.carrier)
    if not any(app in hosts for app in sk.apps):
        out.append(Violation("carrier hosting", f"no server in S hosts a {sk.rule.carrier} (hosts: {', '.join(hosts)})"))
    if cards is not None:
        spec = pool.vocabulary.archetypes[sk.rule.archetype]
        if sk.dataset is not None:
            card = cards.get(sk.dataset)
            if card is None:
                out.append(Violation("schema compatibility", f"dataset {sk.dataset!r} has no usable table"))
            elif not card.supports(sk.rule.archetype):
                out.append(Violation("schema compatibility",
                                     f"{sk.dataset} cannot support {sk.rule.archetype} (it needs {' and '.join(spec.columns)} columns)"))
        elif not any(c.supports(sk.rule.archetype) for c in cards.values()):
            out.append(Violation("schema compatibility", f"no pooled table supports {sk.rule.archetype}"))
    spec = pool.vocabulary.archetypes[sk.rule.archetype]
    carrying = [i for i in sk.intents if _carries(pool, i, spec)]
    actions = [i for i in sk.intents if pool.vocabulary.kind(i.kind).role == "action"]
    if not carrying:
        out.append(Violation("rule attachment", f"no intent can carry a {sk.rule.archetype} rule"
                                                f" (it needs {'a routing write' if spec.needs != 'action' else 'a per-item write'})"))
    elif every_intent and len(carrying) < len(actions):
        out.append(Violation("rule attachment", "an action intent cannot carry the rule"))
    return out


def _carries(pool: AtomPool, intent: IntentRef, spec: Any) -> bool:
    kind = pool.vocabulary.kind(intent.kind)
    return spec.accepts(kind.role, kind.arity)


def validate(sk: Skeleton, pool: AtomPool, cards: dict[str, Any] | None = None) -> Skeleton:
    found = violations(sk, pool, cards)
    if found:
        raise SkeletonError(f"skeleton {sk.domain!r}: {found[0]}")
    return sk


def load_seeds(pool: AtomPool, cards: dict[str, Any] | None = None) -> list[Skeleton]:
    """The bundled seed skeletons (and a custom file's), each validated; a bad one is one clear error."""
    raw = list(read_data("seeds.yaml")["seeds"]) + list(pool.extra_seeds)
    seeds = []
    for i, entry in enumerate(raw):
        try:
            sk = Skeleton.model_validate(entry)
        except ValidationError as exc:
            from envtrain.core.env import format_validation_error

            raise SpecError(f"seed skeleton {i}: {format_validation_error(exc)}") from None
        seeds.append(validate(sk, pool, cards))
    return seeds


# -- recombination ----------------------------------------------------------------------------


def recombine(seeds: list[Skeleton], pool: AtomPool, rng: random.Random, n: int,
              cards: dict[str, Any] | None = None, stats: dict[str, Any] | None = None) -> list[Skeleton]:
    """Up to ``n`` new skeletons, each one edit away from a seed, valid and distinct from the seeds and
    each other. ``stats`` (if given) receives tried / valid / duplicate counts and violations per constraint."""
    seen = {s.hash for s in seeds}
    out: list[Skeleton] = []
    tally = stats if stats is not None else {}
    tally.update({"tried": 0, "valid": 0, "duplicates": 0, "violations": {c: 0 for c in CONSTRAINTS}})
    for _ in range(n * 8):
        if len(out) >= n:
            break
        parent = rng.choice(seeds)
        edit = rng.choice(("replace intent", "replace rule", "add atom"))
        child = _edit(parent, edit, pool, rng)
        if child is None:
            continue
        tally["tried"] += 1
        found = violations(child, pool, cards)
        for v in {v.constraint for v in found}:
            tally["violations"][v] += 1
        if found:
            continue
        if child.hash in seen:
            tally["duplicates"] += 1
            continue
        tally["valid"] += 1
        seen.add(child.hash)
        out.append(child)
    return out


def _edit(parent: Skeleton, edit: str, pool: AtomPool, rng: random.Random) -> Skeleton | None:
    source = f"recombined from seed {parent.hash[:8]} ({parent.domain}): {edit}"
    if edit == "replace intent":
        index = rng.randrange(len(parent.intents))
        old = parent.intents[index]
        role = pool.vocabulary.kind(old.kind).role  # an action for an action, a report for a report
        taken = {(i.app, i.kind) for i in parent.intents}
        options = [a for a in pool.intents if a.app in parent.apps and a.key not in taken
                   and pool.vocabulary.kind(a.kind).role == role]
        if not options:
            return None
        new = rng.choice(options)
        intents = list(parent.intents)
        intents[index] = IntentRef(app=new.app, kind=new.kind)
        chain = parent.chain.replace(old.kind, new.kind)
        return parent.model_copy(update={"intents": tuple(intents), "chain": chain, "source": source, "origin": parent.hash, "dataset": None})
    if edit == "replace rule":
        rule: RuleAtom = rng.choice(pool.rules)
        if (rule.archetype, rule.carrier, rule.has_exception) == tuple(parent.rule.model_dump().values()):
            return None
        chain = f"read the {rule.carrier}; " + parent.chain.split("; ", 1)[-1]
        return parent.model_copy(update={
            "rule": RuleRef(archetype=rule.archetype, carrier=rule.carrier, exception=rule.has_exception),
            "chain": chain, "source": source, "origin": parent.hash, "dataset": None})
    # add atom: a report intent, on an app of S or a new one
    reports = [a for a in pool.intents if pool.vocabulary.kind(a.kind).role == "report"
               and all((a.app, a.kind) != (i.app, i.kind) for i in parent.intents)]
    if not reports:
        return None
    new = rng.choice(reports)
    apps = parent.apps if new.app in parent.apps else parent.apps + (new.app,)
    if len(apps) > MAX_APPS:
        return None
    return parent.model_copy(update={
        "apps": apps, "intents": parent.intents + (IntentRef(app=new.app, kind=new.kind),),
        "chain": f"{parent.chain}; {new.kind} on {new.app}", "source": source, "origin": parent.hash})


# -- how often random skeletons are valid (App. H) ----------------------------------------------


def random_skeleton(pool: AtomPool, rng: random.Random, cards: list[Any]) -> Skeleton:
    """Servers, intents drawn from the kinds each chosen server implements (so tool coverage holds by
    construction, as in the paper), a random rule atom and a random table from the whole pool."""
    apps = tuple(rng.sample(sorted(pool.servers), rng.randint(1, 3)))
    offered = [a for a in pool.intents if a.app in apps]
    if not offered:
        return random_skeleton(pool, rng, cards)
    intents = tuple(IntentRef(app=a.app, kind=a.kind) for a in rng.sample(offered, min(len(offered), rng.randint(1, 3))))
    rule = rng.choice(pool.rules)
    return Skeleton(domain="random", apps=apps, intents=intents,
                    rule=RuleRef(archetype=rule.archetype, carrier=rule.carrier, exception=rule.has_exception),
                    dataset=rng.choice(cards).dataset, chain="random", source="random composition")


def constraint_rates(pool: AtomPool, cards: list[Any], n: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Share of ``n`` random skeletons satisfying each constraint, all four, and all four when every
    action intent must carry the rule (LegoEnv App. H's two readings)."""
    rng = random.Random(seed)
    by_name = {c.dataset: c for c in cards}
    passed = {c: 0 for c in CONSTRAINTS}
    all_one = all_every = 0
    for _ in range(n):
        sk = random_skeleton(pool, rng, cards)
        found = {v.constraint for v in violations(sk, pool, by_name)}
        for c in CONSTRAINTS:
            passed[c] += c not in found
        all_one += not found
        all_every += not violations(sk, pool, by_name, every_intent=True)
    return {"n": n, "satisfied": {c: passed[c] / n for c in CONSTRAINTS},
            "all four (one intent carries the rule)": all_one / n,
            "all four (every intent carries the rule)": all_every / n}


def distinct(skeletons: Iterable[Skeleton]) -> list[Skeleton]:
    seen, out = set(), []
    for sk in skeletons:
        if sk.hash not in seen:
            seen.add(sk.hash)
            out.append(sk)
    return out
