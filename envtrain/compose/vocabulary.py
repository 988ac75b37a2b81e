"""The closed vocabulary V (LegoEnv §3.3): archetypes, carriers, operation kinds, verifier kinds.

It is data (``data/vocabulary.yaml``); a custom atom file may add operation or verifier kinds.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from envtrain.core.errors import SpecError

ARCHETYPES = (
    "threshold routing", "exclusion", "deadline escalation", "tiering",
    "approval chain", "budget quota", "reconciliation", "compliance flag",
)
CARRIERS = ("policy sheet", "policy document", "policy mail", "note field", "card description", "pinned channel message")
ColumnKind = Literal["numeric", "date", "category", "text", "identifier", "contact", "entity"]


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ArchetypeSpec(_Data):
    needs: Literal["action", "route2", "route3"]  # what the rule-carrying intent must be able to write
    columns: tuple[ColumnKind, ...]
    description: str

    def accepts(self, role: str, arity: str) -> bool:
        """Rule attachment: can an intent of this role and arity carry a rule of this archetype?"""
        if role != "action":
            return False
        return self.needs == "action" or arity == "route"


class CarrierSpec(_Data):
    hosts: tuple[str, ...]
    description: str


class OperationKind(_Data):
    role: Literal["action", "report"]  # a write on each selected item, or one deliverable listing them
    arity: Literal["route", "binary"]
    check_kinds: tuple[str, ...]
    description: str


class VerifierKind(_Data):
    template: str
    polarity: Literal["positive", "negative"]


class Vocabulary(_Data):
    archetypes: dict[str, ArchetypeSpec]
    carriers: dict[str, CarrierSpec]
    operation_kinds: dict[str, OperationKind]
    verifier_kinds: dict[str, VerifierKind]

    @model_validator(mode="after")
    def _closed(self) -> "Vocabulary":
        for name in ARCHETYPES:
            if name not in self.archetypes:
                raise SpecError(f"vocabulary: archetype {name!r} is missing")
        for kind, op in self.operation_kinds.items():
            unknown = [c for c in op.check_kinds if c not in self.verifier_kinds]
            if unknown:
                raise SpecError(f"vocabulary: operation kind {kind!r} names unknown verifier kinds {unknown}")
        return self

    def carrier_hosts(self, carrier: str) -> tuple[str, ...]:
        if carrier not in self.carriers:
            raise SpecError(f"unknown carrier {carrier!r} (carriers: {', '.join(self.carriers)})")
        return self.carriers[carrier].hosts

    def kind(self, name: str) -> OperationKind:
        if name not in self.operation_kinds:
            raise SpecError(f"unknown operation kind {name!r} (the vocabulary has {len(self.operation_kinds)} kinds)")
        return self.operation_kinds[name]

    def extended(self, operation_kinds: dict[str, OperationKind], verifier_kinds: dict[str, VerifierKind]) -> "Vocabulary":
        """The vocabulary grows (LegoEnv §3.5): new kinds from a custom atom file."""
        return Vocabulary(
            archetypes=self.archetypes, carriers=self.carriers,
            operation_kinds={**self.operation_kinds, **operation_kinds},
            verifier_kinds={**self.verifier_kinds, **verifier_kinds},
        )


def read_data(name: str) -> dict:
    text = resources.files("envtrain.compose").joinpath("data", name).read_text(encoding="utf-8")
    return yaml.safe_load(text)


@lru_cache(maxsize=1)  # package data, immutable: parse once per process
def builtin_vocabulary() -> Vocabulary:
    try:
        return Vocabulary.model_validate(read_data("vocabulary.yaml"))
    except ValidationError as exc:
        from envtrain.core.env import format_validation_error

        raise SpecError(f"compose vocabulary.yaml: {format_validation_error(exc)}") from None
