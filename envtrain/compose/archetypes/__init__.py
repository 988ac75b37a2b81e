"""The eight rule archetypes (LegoEnv §3.2, App. C), one module each: ``plan(card, rows, rng, words,
values, exception) -> Plan`` instantiates the rule on a table and decides every item in code;
``fits(card, exception)`` says cheaply whether a table can plausibly carry it."""

from __future__ import annotations

from types import MappingProxyType

from envtrain.compose.archetypes import (
    approval_chain, budget_quota, compliance_flag, deadline_escalation, exclusion, reconciliation, threshold_routing, tiering,
)

_MODULES = {
    "threshold routing": threshold_routing, "exclusion": exclusion, "deadline escalation": deadline_escalation,
    "tiering": tiering, "approval chain": approval_chain, "budget quota": budget_quota,
    "reconciliation": reconciliation, "compliance flag": compliance_flag,
}
ARCHETYPE_PLANNERS: MappingProxyType = MappingProxyType({name: m.plan for name, m in _MODULES.items()})
ARCHETYPE_FITS: MappingProxyType = MappingProxyType({name: m.fits for name, m in _MODULES.items()})
