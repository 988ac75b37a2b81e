"""The programmatic part of the EnvCraft Table 18 inspector: what needs no model.

- admission (the five conditions) stands in for solvability and validation integrity;
- schema consistency: the environment compiles (every tool, guard and assertion names real entities and columns);
- every entity the request names exists: each quoted name and each workspace path in the request is
  found in W0 (a file path, or a value of some row) or among the files the reference solution writes.

The LLM rubric scores (0-3 each; keep 3/3/>=2) come from ``envtrain.synth.rubric`` when an
endpoint is configured; without one they stay None and do not decide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from envtrain.core.admission import AdmissionReport
from envtrain.core.env import Environment
from envtrain.core.errors import SpecError
from envtrain.synth.rubric import KEEP, RubricScore

_QUOTED = re.compile(r"[\"']([^\"']{2,80})[\"']")
_PATH = re.compile(r"\b[\w.-]+(?:/[\w.-]+)+\b")


@dataclass(frozen=True)
class Inspection:
    admitted: bool
    schema_ok: bool
    missing_entities: tuple[str, ...]
    reasons: tuple[str, ...] = field(default=())
    rubric: dict[str, int | None] = field(default_factory=lambda: {"solvability": None, "validation": None, "consistency": None})
    judged: bool = False  # an LLM judge was asked (its missing scores then fail)

    @property
    def rubric_kept(self) -> bool:
        """Without a judge, the rubric does not decide; with one, keep at 3 / 3 / >= 2 (EnvCraft)."""
        if not self.judged:
            return True
        return all((self.rubric.get(d) or 0) >= low for d, low in KEEP.items())

    @property
    def kept(self) -> bool:
        return self.admitted and self.schema_ok and not self.missing_entities and self.rubric_kept


def named_in_request(env: Environment) -> set[str]:
    return set(_QUOTED.findall(env.request)) | set(_PATH.findall(env.request))


def inspect(env: Environment, report: AdmissionReport, rubric: RubricScore | None = None) -> Inspection:
    reasons = [f"condition {f.condition}: {f.reason}" for f in report.failures]
    if rubric is not None and not rubric.kept:
        reasons.append(f"rubric {rubric.to_dict()} is below 3/3/2: {rubric.reasons}")
    try:
        from envtrain.core.session import Runtime

        Runtime(env, handlers=_stub_handlers(env))
        schema_ok = True
    except SpecError as exc:
        schema_ok = False
        reasons.append(f"schema: {exc}")
    known: set[str] = set(env.world.files)
    known |= {str(v) for rows in env.world.tables.values() for row in rows for v in row.values()}
    written = {p for p in (str(c.arguments.get("path", "")) for c in env.reference_solution) if p}
    produced = {a_clause.value.value for a in env.verifier.positive for a_clause in a.where  # type: ignore[union-attr]
                if a_clause.column == "path" and hasattr(a_clause.value, "value")}
    produced |= {p for c in env.verifier.checks for p in _PATH.findall(c.script)}  # what a checker reads, the agent writes
    named = named_in_request(env)
    missing = []
    for name in sorted(named):
        if name in known or name in written or name in produced or any(name in str(p) for p in produced):
            continue
        if "/" in name and any(k.startswith(name.rstrip("/") + "/") for k in known):  # a folder of W0
            continue
        if "/" not in name and any(name in k for k in known):
            continue
        if "/" not in name:
            continue  # a quoted phrase that is a value the agent writes (a new stage, a note) need not exist
        missing.append(name)
    reasons += [f"the request names {m!r}, which is neither in W0 nor produced" for m in missing]
    scores = rubric.to_dict() if rubric is not None else {"solvability": None, "validation": None, "consistency": None}
    return Inspection(report.admitted, schema_ok, tuple(missing), tuple(reasons), scores, judged=rubric is not None)


def _stub_handlers(env: Environment) -> dict:
    """Handlers only need to exist for the schema check; the real ones run during admission."""
    from envtrain.apps.handlers import builtin_handlers

    names = {t.handler for a in env.apps for t in a.tools if t.handler} | {c.handler for c in env.verifier.checks}
    out = dict(builtin_handlers())
    for name in names - set(out):
        out[name] = lambda ctx, args: None
    return out
