"""The episode loop for benchmarks whose conversation is not one request over a ``Session``.

It is ``envtrain.rollout.episode``'s loop with the tool side passed in: BFCL's user turns each
run ``respond`` once against BFCL's own executor; reasoning-gym runs it once against an answer
tool. Records (``TurnRecord``, ``Trajectory``), stop reasons, token accounting and the handling
of calls that do not parse are the rollout engine's, so every benchmark's trajectories read alike.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from envtrain.agent.types import EpisodeContext, Message, Policy, SamplingParams, ToolCall
from envtrain.rollout.episode import turn_record, unparsed_observations
from envtrain.rollout.trajectory import Trajectory, TurnRecord


@dataclass(frozen=True)
class ToolOutcome:
    content: str  # what the model reads
    status: int = 200  # HTTP-like: 4xx for the model's fault, as the rollout engine records it


# Runs the calls of one assistant turn (in a worker thread); None: nothing the benchmark can execute.
Execute = Callable[[list[ToolCall]], Optional[list[ToolOutcome]]]


class ChatLoop:
    def __init__(self, policy: Policy, params: SamplingParams, *, task: Any, attempt: int,
                 max_turns: int | None, max_episode_tokens: int | None, tools: list[dict[str, Any]]) -> None:
        self.policy, self.params = policy, params.model_copy(update={"n": 1})
        self.task, self.attempt = task, attempt
        self.max_turns, self.max_episode_tokens = max_turns, max_episode_tokens
        self.tools = tools
        self.messages: list[Message] = []
        self.turns: list[TurnRecord] = []
        self.stop_reason = ""
        self.error = ""
        self.tokens = 0
        self.started = time.perf_counter()

    @property
    def stopped(self) -> bool:
        return bool(self.stop_reason)

    def stop(self, reason: str, error: str = "") -> None:
        if not self.stop_reason:
            self.stop_reason, self.error = reason, error

    async def respond(self, execute: Execute, *, step_limit: int | None = None, extra: dict[str, Any] | None = None,
                      finished: Callable[[], bool] | None = None) -> list[list[ToolCall]]:
        """Assistant turns until the model replies without a call, ``finished()`` says the request
        is answered (an answer tool was called), a limit, or an error. Returns each executed step's calls."""
        executed: list[list[ToolCall]] = []
        while not self.stopped:
            if self.max_turns is not None and len(self.turns) >= self.max_turns:
                self.stop("turn_limit", f"no final answer within {self.max_turns} turns")
                break
            ctx = EpisodeContext(env=self.task, attempt=self.attempt, turn=len(self.turns), extra={**(extra or {}), "step": len(executed)})
            t0 = time.perf_counter()
            generations = await self.policy.generate(self.messages, self.tools, self.params, ctx)
            gen_seconds = time.perf_counter() - t0
            if not generations:
                raise RuntimeError(f"policy {self.policy.name} returned no generation")
            gen = generations[0]
            t1 = time.perf_counter()
            parsed = gen.turn
            index = len(self.messages)
            self.messages.append(parsed.to_message())
            calls = list(parsed.tool_calls)
            outcomes = await asyncio.to_thread(execute, calls) if calls else None
            statuses: list[int] = []
            if outcomes is not None:
                for call, outcome in zip(calls, outcomes):
                    statuses.append(outcome.status)
                    self.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": outcome.content})
                executed.append(calls)
            for note in unparsed_observations(parsed.errors):
                statuses.append(400)
                self.messages.append(note)
            self.tokens = max(self.tokens, gen.prompt_tokens) + gen.completion_tokens
            self.turns.append(turn_record(gen, index, statuses, gen_seconds, time.perf_counter() - t1))
            if gen.finish_reason == "error":
                self.stop("error", gen.text)
            elif self.max_episode_tokens is not None and self.tokens >= self.max_episode_tokens:
                self.stop("token_limit", f"episode used {self.tokens} tokens (limit {self.max_episode_tokens})")
            elif outcomes is None:
                break  # a reply without an executable call ends this request
            elif finished is not None and finished():
                break
            elif step_limit is not None and len(executed) > step_limit:
                self.stop("turn_limit", f"more than {step_limit} steps for one user turn")
        return executed

    async def run(self, body: Callable[[], Any], max_seconds: float) -> None:
        """Run the episode body under the wall-time bound; faults become stop reasons, never exceptions."""
        try:
            await asyncio.wait_for(body(), timeout=max_seconds)
        except asyncio.TimeoutError:
            self.stop("timeout", f"episode exceeded {max_seconds:g} s")
        except Exception as exc:  # an unreachable policy, or garbage from it: recorded, not raised
            self.stop("error", f"{type(exc).__name__}: {exc}")
        self.stop("done")

    def trajectory(self, task_id: str, lineage: dict[str, Any] | None = None) -> Trajectory:
        """The record, verdict fields unset: the adapter's grader fills them."""
        statuses = [s for t in self.turns for s in t.tool_statuses]
        return Trajectory(
            env_id=task_id, attempt=self.attempt, policy=self.policy.name, sampling=self.params.model_dump(mode="json"),
            lineage=lineage or {}, messages=self.messages, tools=self.tools, turns=self.turns,
            stop_reason=self.stop_reason or "done", error=self.error, num_turns=len(self.turns),
            num_tool_calls=len(statuses), num_tool_errors=sum(s >= 400 for s in statuses),
            prompt_tokens=sum(t.prompt_tokens for t in self.turns), completion_tokens=sum(t.completion_tokens for t in self.turns),
            seconds=time.perf_counter() - self.started, seconds_generate=sum(t.seconds_generate for t in self.turns),
            seconds_env=sum(t.seconds_env for t in self.turns),
        ).with_id()
