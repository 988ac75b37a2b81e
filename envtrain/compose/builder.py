"""The programmatic builder (LegoEnv §3.4): a skeleton and a seed become an environment.

W0 is seeded from real dataset rows mapped onto the host app's records; the rule text goes only
into its carrier; distractors meet all but one clause; the expected writes are computed in code;
V+ asserts them, V− guards the records the rule leaves alone; π is the list of tool calls.
The unstated-value guard (guard.py) and the admission check decide whether the result is kept.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.compose.archetypes import ARCHETYPE_FITS, ARCHETYPE_PLANNERS
from envtrain.compose.archetypes.common import Plan, Wording
from envtrain.compose.atoms import AtomPool, TableCard
from envtrain.compose.context import BuildContext, Unbuildable
from envtrain.compose.datacards import DataPool
from envtrain.compose.hosts import CARRIER_WRITERS, HOSTS, REPORTS
from envtrain.compose.skeleton import Skeleton, violations

TOPICS = {
    "threshold routing": "routing", "exclusion": "handling", "deadline escalation": "escalation", "tiering": "tiering",
    "approval chain": "approval", "budget quota": "budget", "reconciliation": "reconciliation", "compliance flag": "compliance",
}
ROUTE_VALUES = {"route2": 2, "route3": 3, "action": 1}
TABLE_TRIES = 3


@dataclass(frozen=True)
class Built:
    env: Environment
    skeleton: Skeleton
    dataset: str
    archetype: str
    carrier: str
    carrier_app: str
    host_app: str
    action_kind: str
    report_kinds: tuple[str, ...]
    stated: tuple[str, ...]  # the texts the agent is told: request, carrier, reference lists, persona
    parts: dict[str, Any] = field(default_factory=dict)  # what the request is made of (pointer, where, asks, today, rule)


def build(sk: Skeleton, pool: AtomPool, data: DataPool, seed: int) -> Built:
    """Build one environment, or raise Unbuildable with the reason (a constraint name first where one applies)."""
    rng = random.Random(seed)
    found = violations(sk, pool, data.cards)
    if found:
        raise Unbuildable(str(found[0]))
    spec = pool.vocabulary.archetypes[sk.rule.archetype]
    carrying = [i for i in sk.intents if spec.accepts(pool.vocabulary.kind(i.kind).role, pool.vocabulary.kind(i.kind).arity)
                and i.app in HOSTS and i.kind in HOSTS[i.app].actions]
    if not carrying:
        raise Unbuildable(f"rule attachment: no realised action intent can carry a {sk.rule.archetype} rule")
    intent = carrying[0]
    others = [i for i in sk.intents if i is not intent and (i.app, i.kind) not in REPORTS]
    if others:  # every intent of an environment is realised, or the skeleton is not built
        raise Unbuildable(f"builder: one action intent per skeleton (also has {others[0].kind!r} on {others[0].app})")
    host = HOSTS[intent.app]()
    action = host.action(intent.kind)
    reports = [REPORTS[(i.app, i.kind)]() for i in sk.intents if (i.app, i.kind) in REPORTS]
    carrier_apps = [a for a in sk.apps if (sk.rule.carrier, a) in CARRIER_WRITERS]
    if not carrier_apps:
        raise Unbuildable(f"carrier hosting: no app of S can hold a {sk.rule.carrier}")
    carrier_app = carrier_apps[0] if len(carrier_apps) == 1 else rng.choice(carrier_apps)
    carrier = CARRIER_WRITERS[(sk.rule.carrier, carrier_app)]()
    # the card says a table supports the archetype; the rows decide. With the table left open, a
    # table whose rows cannot carry this rule gives way to another (at most TABLE_TRIES).
    for attempt in range(1 if sk.dataset is not None else TABLE_TRIES):
        card = _dataset(sk, data, rng, host)
        ctx = BuildContext(rng, dataset=card.dataset, title=card.title)
        values = action.values(ctx, ROUTE_VALUES[spec.needs])
        words = Wording(host.noun, host.plural, host.scoped, host.scoped_plural, action.phrase)
        try:
            plan: Plan = ARCHETYPE_PLANNERS[sk.rule.archetype](card, data.rows(card.dataset), rng, words, values, sk.rule.exception)
            break
        except Unbuildable:
            if attempt + 1 >= (1 if sk.dataset is not None else TABLE_TRIES):
                raise
    if plan.today:
        ctx.base_time = f"{plan.today}T09:00:00Z"
    items = plan.items

    host.setup(ctx)
    host.seed(ctx, items, plan.attrs)
    for report in reports:
        report.setup(ctx)
    topic = f"{host.noun.capitalize()} {TOPICS[sk.rule.archetype]} policy"
    text = plan.text
    if plan.reference is not None:
        lines = [f"{item.key}: {_amount(listed)}" for item, listed in plan.reference]
        where = carrier.place_reference(ctx, f"{host.noun.capitalize()} reference list", lines)
        text = text.replace("{reference}", where)
    reported = [i for i in items if i.decision is not None and (plan.report_value is None or i.decision == plan.report_value)]
    if reports and not reported:
        raise Unbuildable("rule attachment: the rule selects nothing to report")
    selection = f"every {host.noun} {action.done(plan.report_value or values[0])} under this policy"
    for n, report in enumerate(reports):
        sentence = report.instruction(ctx, selection)
        text += " " + (sentence.replace("Afterwards, ", "Also, ", 1) if n else sentence)
    pointer = carrier.place(ctx, topic, text)
    host.reads(ctx, items)
    for item in items:
        if item.decision is not None:
            action.apply(ctx, item, item.decision)
        else:
            action.untouched(ctx, item)
    others = [i for i in items if i not in reported][:4]
    for report in reports:
        report.apply(ctx, reported, others, host.noun)

    asks, where = [r.ask() for r in reports], host.where(ctx)
    request = _request(ctx, rng, where, pointer, asks, plan.today)
    stated = tuple([request, *ctx.stated, *map(str, ctx.persona.values())])
    apps = list(dict.fromkeys([host.app, carrier_app, *(r.app for r in reports), *sk.apps]))
    repairs = sorted({r for a in apps for r in pool.applied.get(a, ())})
    atoms = [pool.servers[a].hash for a in apps]
    atoms += [pool.intent(i.app, i.kind).hash for i in sk.intents if i.app in pool.servers]
    atoms += [pool.rule(sk.rule.archetype, sk.rule.carrier, sk.rule.exception).hash, card.hash]
    doc = {
        "apps": [pool.app_entry(a) for a in apps],
        "world": {"base_time": ctx.base_time, "tables": ctx.tables, "files": ctx.files},
        "request": request,
        "persona": ctx.persona,
        "verifier": {"positive": ctx.positive, "negative": ctx.negative},
        "reference_solution": ctx.calls,
        "provenance": {
            "source": "compose",
            "atoms": atoms,
            "settings": {
                "skeleton": sk.hash, "domain": sk.domain, "chain": sk.chain, "seed": seed,
                "dataset": card.dataset, "archetype": sk.rule.archetype, "carrier": sk.rule.carrier,
                "carrier_app": carrier_app, "exception": sk.rule.exception, "host": host.app,
                "action": intent.kind, "reports": [r.kind for r in reports],
                "check_kinds": dict(sorted(ctx.check_kinds.items())),
                "rule": {k: _plain(v) for k, v in plan.params.items()},
                **({"repairs": repairs} if repairs else {}),  # atom repairs in force (repairs.py); absent: none
            },
        },
    }
    try:
        env = Environment.parse(doc, source=f"compose {sk.domain}")
    except SpecError as exc:  # a builder fault, reported with its reason rather than raised
        raise Unbuildable(f"builder: {exc}") from None
    parts = {"pointer": pointer, "where": where, "asks": asks, "today": plan.today, "rule": text,
             "noun": host.noun, "plural": host.plural, "route_values": list(values) if action.arity == "route" else []}
    return Built(env, sk, card.dataset, sk.rule.archetype, sk.rule.carrier, carrier_app, host.app, intent.kind,
                 tuple(r.kind for r in reports), stated, parts)


def _dataset(sk: Skeleton, data: DataPool, rng: random.Random, host: Any) -> TableCard:
    archetype, exception = sk.rule.archetype, sk.rule.exception
    if sk.dataset is not None:
        card = data.card(sk.dataset)
        if not card.supports(archetype):
            raise Unbuildable(f"schema compatibility: {sk.dataset} cannot support {archetype}")
        return card
    fits = ARCHETYPE_FITS[archetype]
    options = data.supporting(archetype, (archetype, exception, host.app),
                              lambda c: fits(c, exception) and host.fits(c))
    if not options:
        raise Unbuildable(f"schema compatibility: no table supports {archetype} on {host.app}")
    return options[rng.randrange(len(options))]


def _request(ctx: BuildContext, rng: random.Random, where: str, pointer: str, asks: list[str], today: str | None) -> str:
    opening = rng.choice((
        f"Please work through {where} and handle each one as {pointer} says.",
        f"Can you process {where}? Follow {pointer}.",
        f"Go through {where} and apply {pointer} to each of them.",
    ))
    parts = [opening]
    if asks:
        parts.append("Then " + " and ".join(asks) + ".")
    parts.append("Leave everything the policy does not cover as it is.")
    if today:
        parts.insert(0, f"Today is {today}.")
    return " ".join(parts)


def _amount(value: Any) -> str:
    from envtrain.compose.context import display

    return display(value)


def _plain(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


__all__ = ["Built", "TOPICS", "build"]
