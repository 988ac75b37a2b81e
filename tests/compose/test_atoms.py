"""Atom pools: shape rules, the vocabulary's size, intent atoms against capability cards, custom files."""

from __future__ import annotations

import pytest

from envtrain.core.errors import SpecError
from envtrain.compose.atoms import AtomPool, RuleAtom, shape_problem
from envtrain.compose.vocabulary import ARCHETYPES, CARRIERS


def test_shape_rules_accept_a_plain_shape() -> None:
    assert shape_problem("Items whose <numeric> is above <threshold> go to <first>; others to <second>.") is None
    assert shape_problem("Escalate within a day. Then close it.") is None  # single digits and sentence starts are fine


@pytest.mark.parametrize("shape, why", [
    ("x" * 401, "401 characters"),
    ("Items above 10 go to the first queue.", "'10'"),
    ("Items above 2.5 go to the first queue.", "'2.5'"),
    ("Items approved by Maria go to the first queue.", "'Maria'"),
    ("   ", "empty"),
])
def test_shape_rules_reject(shape: str, why: str) -> None:
    problem = shape_problem(shape)
    assert problem is not None and why in problem
    with pytest.raises(ValueError, match="shape"):
        RuleAtom(archetype="exclusion", carrier="policy sheet", shape=shape)


def test_rule_atom_names_must_be_known() -> None:
    with pytest.raises(ValueError, match="unknown archetype 'routing'"):
        RuleAtom(archetype="routing", carrier="policy sheet", shape="Route items.")
    with pytest.raises(ValueError, match="unknown carrier 'memo'"):
        RuleAtom(archetype="exclusion", carrier="memo", shape="Route items.")


def test_builtin_pool_sizes_and_hashes(pool: AtomPool) -> None:
    kinds = {a.kind for a in pool.intents}
    assert len(kinds) >= 30
    assert len(pool.vocabulary.verifier_kinds) >= 15
    assert len(pool.rules) == len(ARCHETYPES) * len(CARRIERS) * 2
    assert {r.archetype for r in pool.rules} == set(ARCHETYPES)
    assert len(pool.servers) == 12
    hashes = [a.hash for a in pool.intents] + [r.hash for r in pool.rules] + [s.hash for s in pool.servers.values()]
    assert len(set(hashes)) == len(hashes)
    assert AtomPool.builtin().intents[0].hash == pool.intents[0].hash  # content hashes are stable


def test_every_intent_atom_is_implemented_and_realised(pool: AtomPool) -> None:
    from envtrain.compose.hosts import HOSTS, REPORTS

    for atom in pool.intents:
        assert pool.servers[atom.app].implements(atom.kind), atom
        role = pool.vocabulary.kind(atom.kind).role
        realised = (atom.app in HOSTS and atom.kind in HOSTS[atom.app].actions) if role == "action" else (atom.app, atom.kind) in REPORTS
        assert realised, atom
        assert atom.check_kinds and all(k in pool.vocabulary.verifier_kinds for k in atom.check_kinds)


def test_every_carrier_has_a_writer_on_each_host(pool: AtomPool) -> None:
    from envtrain.compose.hosts import CARRIER_WRITERS

    for carrier, spec in pool.vocabulary.carriers.items():
        for app in spec.hosts:
            assert (carrier, app) in CARRIER_WRITERS
            assert carrier in pool.servers[app].carriers


def test_custom_atom_file(pool: AtomPool, tmp_path) -> None:
    good = tmp_path / "atoms.yaml"
    good.write_text("rules:\n  - {archetype: exclusion, carrier: policy mail, shape: 'Never touch items whose <category> is <value>.'}\n")
    assert len(pool.with_custom(good).rules) == len(pool.rules) + 1

    broken = tmp_path / "broken.yaml"
    broken.write_text("rules: [ {archetype: exclusion\n")
    with pytest.raises(SpecError, match="broken.yaml: not valid YAML"):
        pool.with_custom(broken)

    unknown_app = tmp_path / "app.yaml"
    unknown_app.write_text("intents:\n  - {app: erp, kind: flag record, pos: 3, neg: 1}\n")
    with pytest.raises(SpecError, match="unknown app 'erp'"):
        pool.with_custom(unknown_app)

    bad_shape = tmp_path / "shape.yaml"
    bad_shape.write_text("rules:\n  - {archetype: exclusion, carrier: policy mail, shape: 'Never pay more than 500.'}\n")
    with pytest.raises(SpecError, match="shape.yaml: rules.0.shape: .*'500'"):
        pool.with_custom(bad_shape)

    unimplemented = tmp_path / "kind.yaml"
    unimplemented.write_text("intents:\n  - {app: mail, kind: escalate ticket, pos: 3, neg: 1}\n")
    with pytest.raises(SpecError, match="no tool of mail implements 'escalate ticket'"):
        pool.with_custom(unimplemented)


def test_custom_server_atoms(pool: AtomPool, tmp_path) -> None:
    """A custom file may bring a new version of a server (the pool then builds from it, by full spec)."""
    import yaml

    from envtrain.apps import load_app

    doc = load_app("hr").model_dump(mode="json")
    doc["description"] = "HR, as our fork serves it."
    custom = tmp_path / "servers.yaml"
    custom.write_text(yaml.safe_dump({"servers": [doc]}))
    forked = pool.with_custom(custom)
    assert forked.spec("hr").description == "HR, as our fork serves it." and forked.app_entry("hr")["name"] == "hr"
    assert forked.servers["hr"].spec_hash != pool.servers["hr"].spec_hash and pool.app_entry("hr") == "hr"

    broken = tmp_path / "broken_server.yaml"
    broken.write_text(yaml.safe_dump({"servers": [{**doc, "capabilities": {"approve leave request": ["no_such_tool"]}}]}))
    with pytest.raises(SpecError, match="broken_server.yaml: servers.0: .*unknown tools"):
        pool.with_custom(broken)
