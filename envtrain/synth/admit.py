"""Admission for synthesized environments, with the one repair a sampler may make on its own:
a V− assertion no reachable world can break (condition 4) says nothing, so it is dropped and the
environment is checked again. Every other failure rejects the draw."""

from __future__ import annotations

from collections.abc import Mapping

from envtrain.core.admission import AdmissionReport, check_admission
from envtrain.core.env import Environment
from envtrain.core.runtime import Handler


def admit(env: Environment, *, handlers: Mapping[str, Handler] | None = None, search_budget: int = 120) -> tuple[Environment, AdmissionReport]:
    report = check_admission(env, handlers=handlers, search_budget=search_budget)
    if report.admitted or any(f.condition != 4 for f in report.failures):
        return env, report
    dead = {f.assertion for f in report.failures}
    negative = tuple(a for a in env.verifier.negative if f"V- {a.name or a.describe()}" not in dead)
    data = env.model_dump(mode="json", exclude={"id"})
    data["verifier"]["negative"] = [a.model_dump(mode="json") for a in negative]
    repaired = Environment.parse(data)
    return repaired, check_admission(repaired, handlers=handlers, search_budget=search_budget)
