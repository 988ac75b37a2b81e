"""A transformation plan Π_k as data: operators bound to views of the parent, in order.

Plans are JSON (``Plan.model_json_schema()`` is what an LLM proposer's answer is validated
against) and replayable: Apply(parent, plan) is a pure function, so validation can rebuild the
candidate from the frozen parent and compare hashes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envtrain.core.io import atomic_write_text, canonical_json, content_hash, load_document
from envtrain.scale.operators.base import PlanError


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanStep(_M):
    operator: str = Field(description="an operator name from the catalogue, e.g. 'pagination'")
    target: str = Field(description="a view id of the parent (L3), or an untransformed resource (helpdesk.tickets, files)")
    params: dict[str, Any] = Field(default_factory=dict, description="the operator's parameters")
    binds: tuple[str, ...] = Field(
        default=(), description="token sources to compose with: view ids, optionally with the layer (L4:export)"
    )


class Plan(_M):
    parent: str = Field(description="the id of the environment the plan applies to")
    steps: tuple[PlanStep, ...] = Field(min_length=1, max_length=8)
    release_dependencies: bool = Field(
        default=False, description="apply with every cross-operator prerequisite released (ablation)"
    )
    proposer: str = "programmatic"
    note: str = ""

    @property
    def hash(self) -> str:
        return content_hash(self.model_dump(mode="json"))

    def to_json(self) -> str:
        return canonical_json(self.model_dump(mode="json"))

    def save(self, path: str | Path) -> None:
        import json

        atomic_write_text(path, json.dumps(self.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")

    @classmethod
    def parse(cls, data: Any, *, source: str = "plan") -> "Plan":
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            from envtrain.core.env import format_validation_error

            raise PlanError(f"{source}: not a valid plan: {format_validation_error(exc)}") from None

    @classmethod
    def load(cls, path: str | Path) -> "Plan":
        try:
            data = load_document(path)
        except ValueError as exc:
            raise PlanError(str(exc)) from None
        return cls.parse(data, source=str(path))


def plan_schema() -> dict[str, Any]:
    return Plan.model_json_schema()
