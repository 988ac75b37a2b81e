"""Shared helpers for the BFCL tests: run episodes of the adapter with any policy, scripted policies."""

from __future__ import annotations

import asyncio
from typing import Any

from envtrain.agent.types import Generation, ParsedTurn, SamplingParams, ToolCall
from envtrain.bench.bfcl.adapter import BFCLAdapter, BFCLTask
from envtrain.bench.types import Episode, EpisodeLimits, Grade


def play(adapter: BFCLAdapter, task: BFCLTask, policy: Any, limits: EpisodeLimits = EpisodeLimits()) -> tuple[Episode, Grade]:
    episode = asyncio.run(adapter.episode(task, policy, SamplingParams(), limits, 0))
    return episode, adapter.grade(episode)


def text(content: str = "Done.") -> Generation:
    return Generation(turn=ParsedTurn(content=content), text=content, finish_reason="stop")


def calls(*items: tuple[str, dict[str, Any]]) -> Generation:
    turn = ParsedTurn(tool_calls=tuple(ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(items)))
    return Generation(turn=turn, text=str(items), finish_reason="tool_calls")


class Script:
    """Plays fixed generations in order across the whole episode, then replies "Done."; records what it saw."""

    name = "script"

    def __init__(self, generations: list[Generation]) -> None:
        self.generations = list(generations)
        self.seen: list[dict[str, Any]] = []

    async def generate(self, messages, tools, params, ctx):
        self.seen.append({"messages": [dict(m) for m in messages], "tools": [t["function"]["name"] for t in tools], "extra": dict(ctx.extra)})
        return [self.generations.pop(0) if self.generations else text()]

    async def aclose(self):
        return None
