"""The builder: every archetype and every realised intent yields environments that pass the guard and
the five-condition admission check; the rule lives only in its carrier; distractors are there."""

from __future__ import annotations

import json

import pytest

from envtrain.core.admission import check_admission
from envtrain.compose.builder import build
from envtrain.compose.context import Unbuildable
from envtrain.compose.guard import unstated_values
from envtrain.compose.hosts import HOSTS, REPORTS
from envtrain.compose.skeleton import Skeleton
from envtrain.compose.vocabulary import ARCHETYPES

ROUTE_INTENT = {"app": "projects", "kind": "move card"}
DATASET_FOR = {"deadline escalation": "mosaicData/Marriage"}


def skeleton(archetype: str, intents: list[dict], carrier: str = "policy mail", exception: bool = False,
             dataset: str | None = "survival/cgd") -> Skeleton:
    apps = list(dict.fromkeys([i["app"] for i in intents] + [{"policy mail": "mail", "policy sheet": "spreadsheet",
                                                               "pinned channel message": "chat"}.get(carrier, "mail")]))
    return Skeleton.model_validate({"domain": "test", "apps": apps, "intents": intents,
                                    "rule": {"archetype": archetype, "carrier": carrier, "exception": exception},
                                    "dataset": DATASET_FOR.get(archetype, dataset), "chain": "test", "source": "test"})


def admitted(built) -> None:
    assert unstated_values(built.env, built.stated) == []
    report = check_admission(built.env)
    assert report.admitted, [f.to_dict() for f in report.failures]


@pytest.mark.parametrize("exception", [False, True])
@pytest.mark.parametrize("archetype", ARCHETYPES)
def test_every_archetype_builds_admitted_environments(pool, data, archetype, exception) -> None:
    built = build(skeleton(archetype, [ROUTE_INTENT, {"app": "mail", "kind": "send email"}], exception=exception), pool, data, seed=7)
    admitted(built)
    env = built.env
    settings = env.provenance.settings
    assert (settings["archetype"], settings["exception"], settings["dataset"]) == (archetype, exception, built.dataset)
    # the rule is written once, into its carrier (the policy mail), and nowhere the agent is told it directly
    carrier_text = next(m["body"] for m in env.world.tables["mail.messages"] if m["subject"].endswith("policy"))
    assert env.docs == ()
    assert carrier_text.split(":")[0] not in env.request and carrier_text[:60] not in env.request
    dumped = json.dumps(env.world.tables)
    assert dumped.count(json.dumps(carrier_text)[1:-1][:80]) == 1
    for key in ("threshold", "quota", "edges", "days"):
        value = settings["rule"].get(key)
        for v in value if isinstance(value, list) else [value]:
            if v is not None:
                assert f" {v} " not in f" {env.request} "
    # distractors: an in-scope record the rule leaves alone, and an out-of-scope one
    names = [a.name for a in env.verifier.negative]
    assert any("out of scope" in n for n in names)
    in_scope_untouched = any("out of scope" not in n for n in names if "summary" not in n and "sent mail" not in n)
    on_a_boundary = any("exactly" in a.name for a in env.verifier.positive)  # routing: the at-X item takes the other branch
    assert in_scope_untouched or on_a_boundary
    # every record of the host app comes from a dataset row: its key names the row
    prefix = env.provenance.settings["dataset"].split("/")[-1][:3].upper()
    cards = env.world.tables["projects.cards"]
    assert all(c["title"].startswith(prefix) for c in cards if c["list_id"] in (2, 3))


def test_builds_are_deterministic(pool, data) -> None:
    sk = skeleton("compliance flag", [{"app": "invoicing", "kind": "flag record"}], carrier="policy sheet")
    assert build(sk, pool, data, seed=3).env.id == build(sk, pool, data, seed=3).env.id
    assert build(sk, pool, data, seed=3).env.id != build(sk, pool, data, seed=4).env.id


ACTIONS = sorted((a.app, a.kind) for a in __import__("envtrain.compose.atoms", fromlist=["AtomPool"]).AtomPool.builtin().intents
                 if a.app in HOSTS and a.kind in HOSTS[a.app].actions)


@pytest.mark.parametrize("app, kind", ACTIONS)
def test_every_action_intent_is_admitted(pool, data, app, kind) -> None:
    arity = HOSTS[app].actions[kind].arity
    archetype = "threshold routing" if arity == "route" else "exclusion"
    built = build(skeleton(archetype, [{"app": app, "kind": kind}], carrier="pinned channel message"), pool, data, seed=11)
    admitted(built)
    assert built.action_kind == kind and built.host_app == app


@pytest.mark.parametrize("app, kind", sorted(REPORTS))
def test_every_report_intent_is_admitted(pool, data, app, kind) -> None:
    built = build(skeleton("compliance flag", [{"app": "helpdesk", "kind": "add comment"}, {"app": app, "kind": kind}],
                           carrier="policy sheet"), pool, data, seed=5)
    admitted(built)
    assert built.report_kinds == (kind,)
    assert built.env.provenance.settings["check_kinds"]


@pytest.mark.parametrize("carrier, app", [("note field", "helpdesk"), ("note field", "crm"), ("card description", "projects"),
                                          ("policy document", "wiki"), ("policy document", "workspace")])
def test_every_carrier_is_admitted(pool, data, carrier, app) -> None:
    sk = Skeleton.model_validate({"domain": "t", "apps": ["chat", app], "intents": [{"app": "chat", "kind": "pin message"}],
                                  "rule": {"archetype": "reconciliation", "carrier": carrier}, "dataset": "datasets/iris",
                                  "chain": "t", "source": "t"})
    built = build(sk, pool, data, seed=2)
    assert built.carrier_app == app
    admitted(built)


def test_a_table_that_cannot_support_the_rule_is_one_clear_reason(pool, data) -> None:
    sk = skeleton("deadline escalation", [ROUTE_INTENT], dataset=None)
    sk = sk.model_copy(update={"dataset": "datasets/iris"})
    with pytest.raises(Unbuildable, match="^schema compatibility: datasets/iris cannot support deadline escalation"):
        build(sk, pool, data, seed=1)
