"""The EnvCraft scenario catalogue (Tables 5–14) as typed data: one card per scenario row.

    cards = load_catalogue()                    # 60 cards from data/catalogue.yaml, in paper order
    select(cards, "claw-12,general")            # a key, a domain, or words of a name
    cards[0].id                                 # the hash of the card's canonical JSON

A card is what the synthesis engine starts from: the scenario's name and description exactly as
the paper gives them. A scenario FILE (``--scenarios FILE``) holds cards in the same format.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envtrain.core.env import format_validation_error
from envtrain.core.errors import SpecError
from envtrain.core.io import content_hash, load_document

CATALOGUE = Path(__file__).with_name("data") / "catalogue.yaml"
DOMAINS = ("general", "claw")  # general tool-use (Tables 5-9), Claw-specific workspaces (Tables 10-14)


class ScenarioCard(BaseModel):
    """One scenario row: which table, its number there, and the paper's words."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    domain: Literal["general", "claw"]
    table: int | None = None  # the paper's table; None for a user's own scenario
    number: int = Field(ge=1)  # the row number within its domain
    envs: int = Field(default=1, ge=0)  # how many environments the paper built for it ("# Envs")
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)

    @property
    def key(self) -> str:
        return f"{self.domain}-{self.number}"

    @property
    def id(self) -> str:
        return content_hash(self.model_dump(mode="json"))


def parse_cards(data: Any, *, source: str) -> tuple[ScenarioCard, ...]:
    """``{"scenarios": [card, ...]}`` → cards; problems become one SpecError naming the row."""
    rows = data.get("scenarios") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise SpecError(f"{source}: not a scenario file (expected a mapping with a non-empty 'scenarios' list)")
    cards = []
    for i, row in enumerate(rows):
        try:
            cards.append(ScenarioCard.model_validate(row))
        except ValidationError as exc:
            raise SpecError(f"{source}: scenarios.{i}: {format_validation_error(exc)}") from None
    keys = [c.key for c in cards]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise SpecError(f"{source}: scenario keys repeat: {repeated}")
    return tuple(cards)


def load_catalogue(path: str | Path = CATALOGUE) -> tuple[ScenarioCard, ...]:
    try:
        data = load_document(path)
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    return parse_cards(data, source=str(path))


def select(cards: Sequence[ScenarioCard], spec: str | None) -> tuple[ScenarioCard, ...]:
    """Cards matching any comma-separated term: a key (``claw-12``), a domain (``claw``), a card id,
    or words that all occur in the name (``travel budget``). None or ``all`` keeps every card."""
    if spec is None or spec.strip() in ("", "all"):
        return tuple(cards)
    picked: list[ScenarioCard] = []
    for term in (t.strip().lower() for t in spec.split(",") if t.strip()):
        hits = [c for c in cards if term in (c.key, c.domain, c.id)
                or all(word in c.name.lower() for word in term.split())]
        if not hits:
            raise SpecError(f"no scenario matches {term!r} (try a key such as {cards[0].key!r}, a domain {DOMAINS}, or words of a name)")
        picked += [c for c in hits if c not in picked]
    return tuple(picked)
