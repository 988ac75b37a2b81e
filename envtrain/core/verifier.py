"""The verifier V = V+ ∪ V−, compiled to one query: native score = share holding, pass = all hold.

Checker scripts (``Verifier.checks``, V+ only) follow the conditions: each is run by its handler
over the world and counts 1 when it reports pass, 0 otherwise, so admission treats it as one more
V+ assertion ``= 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envtrain.core.compile import Bindings, Compiler, Param, batch, bind
from envtrain.core.condition import Assertion, Site
from envtrain.core.errors import SpecError, ToolError
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


class CheckAssertion(Assertion):
    """A checker script in the verifier's assertion list: holds when its run counts 1."""

    handler: str = ""

    def describe(self) -> str:
        return f"check {self.name!r} ({self.handler}) reports pass"


@dataclass(frozen=True)
class CompiledCheck:
    check: Any  # envtrain.core.env.Check
    handler: Any  # Handler: (ToolContext, {"name", "script"}) -> {"pass": bool, "score": float, "detail": str}
    context_tool: Any  # the Tool the handler's context carries (a read tool named for the check)

    def run(self, world: World) -> tuple[bool, str]:
        """(pass, what the script said); a handler that fails or answers nonsense is a failed check."""
        from envtrain.core.runtime import ToolContext

        try:
            out = self.handler(ToolContext(world, Bindings({}, {}, {}, world.now), self.context_tool),
                               {"name": self.check.name, "script": self.check.script})
        except ToolError as exc:
            return False, f"{exc.kind.value}: {exc.message}"
        except Exception as exc:  # the environment's fault, reported as a failed check, never raised
            return False, f"internal: {type(exc).__name__}: {exc}"
        if not isinstance(out, dict) or not isinstance(out.get("pass"), bool):
            return False, f"the check answered {str(out)[:120]!r}, not {{'pass': bool, ...}}"
        score = out.get("score")
        detail = f"score {score}" if isinstance(score, (int, float)) else ""
        if out.get("detail"):
            detail = f"{detail}: {out['detail']}" if detail else str(out["detail"])
        return out["pass"], detail[:300]


@dataclass(frozen=True)
class CompiledVerifier:
    sql: str
    params: tuple[Param, ...]
    assertions: tuple[tuple[str, Assertion], ...]  # (polarity, assertion), in V+ then V- order, then the checks as "+"
    texts: tuple[tuple[str, str], ...] = ()  # (name, condition text), rendered once
    checks: tuple[CompiledCheck, ...] = ()  # the last len(checks) entries of ``assertions``

    @classmethod
    def build(cls, schema: Schema, verifier: Any, handlers: Any = None) -> "CompiledVerifier":
        pairs = [("+", a) for a in verifier.positive] + [("-", a) for a in verifier.negative]
        frags = []
        for polarity, assertion in pairs:
            try:
                frags.append(Compiler(schema, Site.VERIFIER).count(assertion))
            except SpecError as exc:
                group = "positive" if polarity == "+" else "negative"
                index = (verifier.positive if polarity == "+" else verifier.negative).index(assertion)
                raise SpecError(f"verifier.{group}.{index} ({assertion.name or assertion.entity}): {exc}") from None
        out = batch(frags) if frags else None
        checks = tuple(_compile_check(i, c, handlers or {}) for i, c in enumerate(getattr(verifier, "checks", ())))
        pairs += [("+", CheckAssertion(name=c.check.name, entity="files", count="= 1", handler=c.check.handler)) for c in checks]
        texts = tuple((a.name or a.describe(), a.describe()) for _, a in pairs)
        return cls(out.sql if out else "", out.params if out else (), tuple(pairs), texts, checks)

    def counts(self, world: World) -> tuple[int, ...]:
        return tuple(c for c, _ in self._measure(world))

    def _measure(self, world: World) -> list[tuple[int, str]]:
        """(count, detail) per assertion; a check's count is 1 when it passed."""
        out: list[tuple[int, str]] = []
        if self.sql:
            ns = Bindings({}, {}, {}, world.now)
            out = [(c, "") for c in world.conn.execute(self.sql, bind(self.params, ns)).fetchone()]
        for check in self.checks:
            passed, detail = check.run(world)
            out.append((int(passed), detail))
        return out

    def run(self, world: World) -> VerifyResult:
        results = []
        for (polarity, a), (name, text), (count, detail) in zip(self.assertions, self.texts, self._measure(world)):
            results.append(AssertionResult(name, polarity, a.count.holds(count), count, f"{text} [{detail}]" if detail else text))
        return VerifyResult(tuple(results))


def _compile_check(index: int, check: Any, handlers: Any) -> CompiledCheck:
    from envtrain.core.app import Tool

    if check.handler not in handlers:
        raise SpecError(f"verifier.checks.{index} ({check.name}): handler {check.handler!r} is not registered"
                        f" (registered: {', '.join(sorted(handlers)) or 'none'})")
    tool = Tool(name=f"check_{index}", description=f"verifier check {check.name}", family="read", handler=check.handler)
    return CompiledCheck(check, handlers[check.handler], tool)
