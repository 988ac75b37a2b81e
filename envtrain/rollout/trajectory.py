"""The trajectory record: one episode of one policy on one environment, everything needed to train on it."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envtrain.core.io import content_hash

STOP_REASONS = ("done", "turn_limit", "token_limit", "timeout", "error")


class TurnRecord(BaseModel):
    """One assistant turn: what was generated and what the environment answered."""

    model_config = ConfigDict(extra="forbid")

    message_index: int  # position of the assistant message in ``messages``
    text: str  # raw completion text
    finish_reason: str
    prompt_token_ids: list[int] | None = None  # (P,) where the backend sees tokens
    token_ids: list[int] | None = None  # (T,)
    logprobs: list[float] | None = None  # (T,) sampling logprob per completion token
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_statuses: list[int] = Field(default_factory=list)  # (C,) HTTP-like status per call; 400 for a call that did not parse
    train: bool = True  # loss mask: False when a call was answered by a 4xx error (LegoEnv App. E, RES App. B)
    seconds_generate: float = 0.0
    seconds_env: float = 0.0  # everything but generation: parsing, tool steps, bookkeeping


class Trajectory(BaseModel):
    """An episode. ``id`` hashes the environment, attempt, policy and messages."""

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    env_id: str
    attempt: int
    policy: str
    sampling: dict[str, Any]
    lineage: dict[str, Any] = Field(default_factory=dict)  # source, parent, depth of the environment
    messages: list[dict[str, Any]]  # OpenAI chat format; tool-call arguments as JSON strings
    tools: list[dict[str, Any]]  # OpenAI tools format
    turns: list[TurnRecord]
    passed: bool = False
    score: float = 0.0
    assertions: list[dict[str, Any]] = Field(default_factory=list)
    stop_reason: str = "done"  # one of STOP_REASONS
    error: str = ""
    num_turns: int = 0
    num_tool_calls: int = 0
    num_tool_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    seconds_generate: float = 0.0
    seconds_env: float = 0.0

    def with_id(self) -> "Trajectory":
        key = {"env": self.env_id, "attempt": self.attempt, "policy": self.policy, "messages": self.messages}
        return self.model_copy(update={"id": content_hash(key)})

    def train_mask(self) -> list[int]:
        """One flag per assistant message: 1 trains on it, 0 masks it out."""
        return [int(t.train) for t in self.turns]

    def to_row(self) -> dict[str, Any]:
        """A dataset row: ``messages`` and ``tools`` as TRL's SFTTrainer reads them, plus metadata."""
        return {
            "id": self.id,
            "env_id": self.env_id,
            "attempt": self.attempt,
            "policy": self.policy,
            "messages": [_row_message(m) for m in self.messages],
            "tools": json.dumps(self.tools, ensure_ascii=False),  # TRL json.loads a string column
            "turn_mask": self.train_mask(),
            "passed": self.passed,
            "score": self.score,
            "stop_reason": self.stop_reason,
            "num_turns": self.num_turns,
            "num_tool_calls": self.num_tool_calls,
            "num_tool_errors": self.num_tool_errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": self.seconds,
            "record": self.model_dump_json(),  # the whole record: token ids, logprobs, assertions, timings
        }


_MESSAGE_FIELDS = ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")


def _row_message(message: dict[str, Any]) -> dict[str, Any]:
    """The same keys in every message, so every row of a dataset has one Arrow schema."""
    out = {key: message.get(key) for key in _MESSAGE_FIELDS}
    if out["content"] is None:
        out["content"] = ""
    return out
