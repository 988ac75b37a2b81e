"""The verifier V = V+ ∪ V−, compiled to one query: native score = share holding, pass = all hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envtrain.core.compile import Bindings, Compiler, Param, batch, bind
from envtrain.core.condition import Assertion, Site
from envtrain.core.errors import SpecError
from envtrain.core.schema import Schema
from envtrain.core.world import World


@dataclass(frozen=True)
class AssertionResult:
    name: str
    polarity: str  # "+" (must be written) or "-" (must stay untouched)
    holds: bool
    count: int
    condition: str  # the assertion as text

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "polarity": self.polarity, "holds": self.holds, "count": self.count, "condition": self.condition}


@dataclass(frozen=True)
class VerifyResult:
    assertions: tuple[AssertionResult, ...]

    @property
    def score(self) -> float:
        return sum(a.holds for a in self.assertions) / len(self.assertions) if self.assertions else 0.0

    @property
    def passed(self) -> bool:
        return bool(self.assertions) and all(a.holds for a in self.assertions)

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "score": self.score, "assertions": [a.to_dict() for a in self.assertions]}


@dataclass(frozen=True)
class CompiledVerifier:
    sql: str
    params: tuple[Param, ...]
    assertions: tuple[tuple[str, Assertion], ...]  # (polarity, assertion), in V+ then V- order
    texts: tuple[tuple[str, str], ...] = ()  # (name, condition text), rendered once

    @classmethod
    def build(cls, schema: Schema, verifier: Any) -> "CompiledVerifier":
        pairs = [("+", a) for a in verifier.positive] + [("-", a) for a in verifier.negative]
        frags = []
        for polarity, assertion in pairs:
            try:
                frags.append(Compiler(schema, Site.VERIFIER).count(assertion))
            except SpecError as exc:
                group = "positive" if polarity == "+" else "negative"
                index = (verifier.positive if polarity == "+" else verifier.negative).index(assertion)
                raise SpecError(f"verifier.{group}.{index} ({assertion.name or assertion.entity}): {exc}") from None
        out = batch(frags)
        texts = tuple((a.name or a.describe(), a.describe()) for _, a in pairs)
        return cls(out.sql, out.params, tuple(pairs), texts)

    def counts(self, world: World) -> tuple[int, ...]:
        ns = Bindings({}, {}, {}, world.now)
        return tuple(world.conn.execute(self.sql, bind(self.params, ns)).fetchone()) if self.assertions else ()

    def run(self, world: World) -> VerifyResult:
        results = []
        for (polarity, a), (name, text), count in zip(self.assertions, self.texts, self.counts(world)):
            results.append(AssertionResult(name, polarity, a.count.holds(count), count, text))
        return VerifyResult(tuple(results))
