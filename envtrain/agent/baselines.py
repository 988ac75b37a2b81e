"""Baseline policies: the oracle (a fixture, never a model result), a no-op and a random caller."""

from __future__ import annotations

import random
from typing import Any

from envtrain.agent.types import EpisodeContext, Generation, Message, ParsedTurn, SamplingParams, ToolCall

DONE = "Done."


def _text_turn(text: str) -> Generation:
    return Generation(turn=ParsedTurn(content=text), text=text, finish_reason="stop")


class OraclePolicy:
    """Replays the environment's reference solution, one call per turn, then says it is done.

    A fixture for tests and for validating environments: its numbers are never a model's.
    """

    name = "oracle"

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, ctx: EpisodeContext) -> list[Generation]:
        solution = ctx.env.reference_solution
        if ctx.turn >= len(solution):
            return [_text_turn(DONE) for _ in range(params.n)]
        call = solution[ctx.turn]
        turn = ParsedTurn(tool_calls=(ToolCall(id=f"call_{ctx.turn}", name=call.tool, arguments=dict(call.arguments)),))
        text = f"<tool_call>{turn.tool_calls[0].to_openai()['function']}</tool_call>"
        return [Generation(turn=turn, text=text, finish_reason="tool_calls") for _ in range(params.n)]

    async def aclose(self) -> None:
        return None


class NoopPolicy:
    """Answers without acting: the floor every model should beat."""

    name = "noop"

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, ctx: EpisodeContext) -> list[Generation]:
        return [_text_turn("I will not take any action.") for _ in range(params.n)]

    async def aclose(self) -> None:
        return None


class RandomPolicy:
    """Calls random tools with arguments drawn from their schemas for a few turns, then stops."""

    def __init__(self, seed: int = 0, calls: int = 5) -> None:
        self.name = f"random:{seed}"
        self.seed = seed
        self.calls = calls

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, ctx: EpisodeContext) -> list[Generation]:
        out = []
        for k in range(params.n):
            rng = random.Random(f"{self.seed}:{ctx.env.id}:{ctx.attempt}:{ctx.turn}:{k}")
            if ctx.turn >= self.calls or not tools:
                out.append(_text_turn(DONE))
                continue
            fn = rng.choice(tools)["function"]
            props = fn.get("parameters", {}).get("properties", {})
            args = {name: _sample(schema, rng) for name, schema in props.items() if name in fn["parameters"].get("required", []) or rng.random() < 0.3}
            turn = ParsedTurn(tool_calls=(ToolCall(id=f"call_{ctx.turn}", name=fn["name"], arguments=args),))
            out.append(Generation(turn=turn, text=str(turn.tool_calls[0].to_openai()["function"]), finish_reason="tool_calls"))
        return out

    async def aclose(self) -> None:
        return None


def _sample(schema: dict[str, Any], rng: random.Random) -> Any:
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "integer":
        return rng.randint(1, 20)
    if kind == "number":
        return round(rng.uniform(0, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_sample(schema.get("items", {"type": "string"}), rng)]
    if kind == "object":
        return {}
    return rng.choice(["ok", "urgent", "2026-03-02", "team@example.com", "note"])
