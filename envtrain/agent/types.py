"""The policy interface every model backend implements (vLLM, OpenAI-compatible HTTP, HF, oracle, no-op).

One async method: given the conversation so far and the tools, return ``n`` assistant turns.
Backends that see tokens (vLLM, HF) fill token ids and logprobs; HTTP backends may not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Message = dict[str, Any]  # OpenAI chat format: {"role", "content", "tool_calls"?, "reasoning_content"?, ...}


class SamplingParams(BaseModel):
    """Sampling settings, recorded in every trajectory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(default=0.7, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=1024, ge=1)  # per assistant turn
    n: int = Field(default=1, ge=1)  # samples per request
    seed: int | None = None
    stop: tuple[str, ...] = ()


class ToolCall(BaseModel):
    """One parsed call. ``arguments`` is the decoded object, or the raw text when it did not decode."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] | str

    def to_openai(self) -> dict[str, Any]:
        import json

        args = self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments, ensure_ascii=False)
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": args}}


class ParsedTurn(BaseModel):
    """An assistant completion split into reasoning, visible content and tool calls.

    ``errors`` lists tool-call text that did not parse; the rollout turns each into an error
    observation the model sees, and the episode goes on.
    """

    model_config = ConfigDict(frozen=True)

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    errors: tuple[str, ...] = ()

    def to_message(self) -> Message:
        message: Message = {"role": "assistant", "content": self.content}
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        if self.tool_calls:
            message["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        return message


@dataclass
class Generation:
    """One sampled assistant turn."""

    turn: ParsedTurn
    text: str  # the raw completion text as generated (what the model said, before parsing)
    finish_reason: str  # "stop" | "length" | "tool_calls" | "error"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_token_ids: list[int] | None = None  # (P,) the rendered prompt, where the backend sees tokens
    token_ids: list[int] | None = None  # (T,) the completion
    logprobs: list[float] | None = None  # (T,) sampling logprob of each completion token
    seconds: float = 0.0  # generation wall time


@dataclass(frozen=True)
class EpisodeContext:
    """What a policy may know about the episode beyond the messages (the oracle reads the environment)."""

    env: Any  # envtrain.core.Environment
    attempt: int = 0
    turn: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    """A model backend. Implementations import heavy libraries inside, never at module import."""

    name: str  # e.g. "oracle", "hf:/path", "openai:http://host:port/v1", "vllm:MODEL"

    async def generate(
        self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, ctx: EpisodeContext
    ) -> list[Generation]:
        """``params.n`` assistant turns for the conversation; never raises for a model's bad output."""
        ...

    async def aclose(self) -> None:
        """Release servers, sessions, GPU memory."""
        ...
