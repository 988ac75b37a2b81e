"""The condition ⟨entity, scope, cardinality⟩ as typed data (LegoEnv §3.1, App. A).

One model serves every site: tool preconditions, entity constraints, read filters and verifier
assertions. Clauses are stored as parsed trees and serialised as their canonical text.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainSerializer, PlainValidator, WithJsonSchema

from envtrain.core.errors import SpecError
from envtrain.core.expr import Clause, Expr, parse_clause, parse_expr, unparse_clause, unparse_expr


class Site(str, Enum):
    """Where a condition appears; each site fixes which namespaces it may read (App. A)."""

    PRECONDITION = "precondition"
    POSTCONDITION = "postcondition"
    EFFECT = "effect"
    READ_FILTER = "read filter"
    CONSTRAINT = "entity constraint"
    VERIFIER = "verifier"

    @property
    def namespaces(self) -> frozenset[str]:
        return _VISIBLE[self]


# A verifier sees only the final world (and its clock); $was is the row before an update.
_VISIBLE = {
    Site.PRECONDITION: frozenset({"arg", "actor", "session", "now"}),
    Site.POSTCONDITION: frozenset({"arg", "actor", "session", "now"}),
    Site.EFFECT: frozenset({"arg", "actor", "session", "now", "was"}),
    Site.READ_FILTER: frozenset({"arg", "actor", "session", "now"}),
    Site.CONSTRAINT: frozenset({"now"}),
    Site.VERIFIER: frozenset({"now"}),
}


_COMPARE = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@dataclass(frozen=True)
class Cardinality:
    op: str  # = != < <= > >=
    n: int

    def holds(self, count: int) -> bool:
        return _COMPARE[self.op](count, self.n)

    def __str__(self) -> str:
        return f"{self.op} {self.n}"


_CARD = re.compile(r"^\s*(>=|<=|!=|≠|≥|≤|=|<|>)\s*(\d+)\s*$")
_CARD_ALIASES = {"exists": Cardinality(">=", 1), "not exists": Cardinality("=", 0)}
_CARD_UNICODE = {"≥": ">=", "≤": "<=", "≠": "!="}


def parse_cardinality(value: Any) -> Cardinality:
    if isinstance(value, Cardinality):
        return value
    if isinstance(value, str):
        text = " ".join(value.split())
        if text in _CARD_ALIASES:
            return _CARD_ALIASES[text]
        match = _CARD.match(text)
        if match:
            op = _CARD_UNICODE.get(match.group(1), match.group(1))
            return Cardinality(op, int(match.group(2)))
    raise SpecError(f"bad cardinality {value!r}: use '>= n', '= n', '<= n', '!= n', '> n', '< n', 'exists' or 'not exists'")


def _to_clause(value: Any) -> Clause:
    return value if isinstance(value, Clause) else parse_clause(value)


def _to_expr(value: Any) -> Expr:
    if isinstance(value, str):
        return parse_expr(value)
    if value is None or isinstance(value, (bool, int, float)):
        from envtrain.core.expr import Lit

        return Lit(value)
    if isinstance(value, (Clause,)) or not hasattr(value, "__dataclass_fields__"):
        raise SpecError(f"an expression is a string like \"$arg.id\" or \"'paid'\", or a number/bool/null, got {value!r}")
    return value


ClauseField = Annotated[
    Clause, PlainValidator(_to_clause), PlainSerializer(unparse_clause, return_type=str), WithJsonSchema({"type": "string"})
]
ExprField = Annotated[
    Any, PlainValidator(_to_expr), PlainSerializer(unparse_expr, return_type=str), WithJsonSchema({"type": "string"})
]
CardinalityField = Annotated[
    Cardinality, PlainValidator(parse_cardinality), PlainSerializer(str, return_type=str), WithJsonSchema({"type": "string"})
]


class Condition(BaseModel):
    """Holds when the number of ``entity`` rows satisfying every clause of ``where`` meets ``count``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entity: str
    where: tuple[ClauseField, ...] = ()
    count: CardinalityField = Cardinality(">=", 1)

    def describe(self) -> str:
        scope = " and ".join(unparse_clause(c) for c in self.where) or "any row"
        return f"count({self.entity} where {scope}) {self.count}"


class Assertion(Condition):
    """A verifier assertion: a condition with a short human name."""

    name: str = ""
