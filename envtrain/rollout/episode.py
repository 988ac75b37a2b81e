"""One episode: a policy acts in a session until it stops, runs out of turns, tokens or time.

Environment steps run in a worker thread (``asyncio.to_thread``) so a slow tool never stalls
the event loop that other episodes' generation runs on. Every stop reason is recorded and the
verifier runs on whatever world the episode left, timeouts and errors included.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envtrain.agent.types import EpisodeContext, Generation, Policy, SamplingParams
from envtrain.core.session import Runtime, Session
from envtrain.rollout.trajectory import Trajectory, TurnRecord

SYSTEM_PROMPT = (
    "You act for {actor} in the business applications whose tools you are given. Complete the "
    "user's request by calling tools; read what each call returns before the next. When the work "
    "is done, reply with a short summary and no tool call."
)


class RolloutLimits(BaseModel):
    """Per-episode bounds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_turns: int = Field(default=50, ge=1)  # assistant turns
    max_episode_tokens: int = Field(default=65_536, ge=1)  # prompt of the last turn + all completions
    max_seconds: float = Field(default=600.0, gt=0)  # wall time per episode


def first_messages(runtime: Runtime) -> list[dict[str, Any]]:
    """The system prompt (persona and the public documents) and the request."""
    env = runtime.env
    persona = env.persona
    actor = ", ".join(f"{k}: {v}" for k, v in persona.items()) if persona else "the user"
    system = SYSTEM_PROMPT.format(actor=actor)
    for doc in env.docs:
        system += f"\n\n# {doc.title}\n{doc.body}"
    return [{"role": "system", "content": system}, {"role": "user", "content": env.request}]


async def run_episode(
    runtime: Runtime, policy: Policy, params: SamplingParams, limits: RolloutLimits = RolloutLimits(), *, attempt: int = 0,
) -> Trajectory:
    """Run one episode to its end and score it; never raises for the policy's or the tools' faults."""
    start = time.perf_counter()
    session = runtime.session()
    obs = await asyncio.to_thread(session.reset)
    state = _Episode(runtime, policy, params.model_copy(update={"n": 1}), limits, attempt, session, obs.tools)
    try:
        await asyncio.wait_for(state.loop(), timeout=limits.max_seconds)
    except asyncio.TimeoutError:
        state.stop("timeout", f"episode exceeded {limits.max_seconds:g} s")
    except Exception as exc:  # a policy that cannot be reached, or returns garbage: recorded, not raised
        state.stop("error", f"{type(exc).__name__}: {exc}")
    try:
        verdict = await asyncio.to_thread(session.verify)
    finally:
        session.close()
    env = runtime.env
    traj = Trajectory(
        env_id=env.id,
        attempt=attempt,
        policy=policy.name,
        sampling=params.model_dump(mode="json"),
        lineage={"source": env.provenance.source, "parent": env.provenance.parent, "depth": env.provenance.depth},
        messages=state.messages,
        tools=obs.tools,
        turns=state.turns,
        passed=verdict.passed,
        score=verdict.score,
        assertions=[a.to_dict() for a in verdict.assertions],
        stop_reason=state.stop_reason or "done",
        error=state.error,
        num_turns=len(state.turns),
        num_tool_calls=sum(len(t.tool_statuses) for t in state.turns),
        num_tool_errors=sum(s >= 400 for t in state.turns for s in t.tool_statuses),
        prompt_tokens=sum(t.prompt_tokens for t in state.turns),
        completion_tokens=sum(t.completion_tokens for t in state.turns),
        seconds=time.perf_counter() - start,
        seconds_generate=sum(t.seconds_generate for t in state.turns),
        seconds_env=sum(t.seconds_env for t in state.turns),
    )
    return traj.with_id()


class _Episode:
    def __init__(self, runtime: Runtime, policy: Policy, params: SamplingParams, limits: RolloutLimits,
                 attempt: int, session: Session, tools: list[dict[str, Any]]) -> None:
        self.runtime, self.policy, self.params, self.limits = runtime, policy, params, limits
        self.attempt, self.session, self.tools = attempt, session, tools
        self.messages = first_messages(runtime)
        self.turns: list[TurnRecord] = []
        self.stop_reason = ""
        self.error = ""
        self.tokens = 0

    def stop(self, reason: str, error: str = "") -> None:
        if not self.stop_reason:
            self.stop_reason, self.error = reason, error

    async def loop(self) -> None:
        for turn in range(self.limits.max_turns):
            ctx = EpisodeContext(env=self.runtime.env, attempt=self.attempt, turn=turn)
            t0 = time.perf_counter()
            generations = await self.policy.generate(self.messages, self.tools, self.params, ctx)
            gen_seconds = time.perf_counter() - t0
            if not generations:
                raise RuntimeError(f"policy {self.policy.name} returned no generation")
            done = await self.record(generations[0], gen_seconds)
            if done:
                return
        self.stop("turn_limit", f"no final answer within {self.limits.max_turns} turns")

    async def record(self, gen: Generation, gen_seconds: float) -> bool:
        """Append the assistant turn and the environment's answers; True when the episode is over."""
        t0 = time.perf_counter()
        waited = 0.0  # time spent queued for a worker thread, not working: not environment time
        parsed = gen.turn
        index = len(self.messages)
        self.messages.append(parsed.to_message())
        statuses: list[int] = []
        for call in parsed.tool_calls:
            sent = time.perf_counter()
            result, worked = await asyncio.to_thread(_timed_step, self.session, {"tool": call.name, "arguments": call.arguments})
            waited += time.perf_counter() - sent - worked
            statuses.append(result.status)
            self.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result.content()})
        for note in unparsed_observations(parsed.errors):
            statuses.append(400)
            self.messages.append(note)
        self.tokens = max(self.tokens, gen.prompt_tokens) + gen.completion_tokens
        self.turns.append(turn_record(gen, index, statuses, gen_seconds, time.perf_counter() - t0 - waited))
        if gen.finish_reason == "error":
            self.stop("error", gen.text)
            return True
        if self.tokens >= self.limits.max_episode_tokens:
            self.stop("token_limit", f"episode used {self.tokens} tokens (limit {self.limits.max_episode_tokens})")
            return True
        if statuses:
            return False
        # No call: the model answered. Cut off at max_tokens without an answer counts as a token stop.
        self.stop("token_limit" if gen.finish_reason == "length" else "done")
        return True


def _timed_step(session: Session, call: dict[str, Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = session.step(call)
    return result, time.perf_counter() - start


def unparsed_observations(errors: tuple[str, ...]) -> list[dict[str, Any]]:
    """A call that did not parse: the model sees why in a user turn, and the episode goes on."""
    return [{"role": "user", "content": json.dumps(
        {"error": {"kind": "malformed_arguments", "message": f"your tool call could not be parsed: {problem}"}})} for problem in errors]


def turn_record(gen: Generation, index: int, statuses: list[int], gen_seconds: float, env_seconds: float) -> TurnRecord:
    """The record of one assistant turn; a turn any of whose calls got a 4xx is masked out of training."""
    return TurnRecord(
        message_index=index, text=gen.text, finish_reason=gen.finish_reason,
        prompt_token_ids=gen.prompt_token_ids, token_ids=gen.token_ids, logprobs=gen.logprobs,
        prompt_tokens=gen.prompt_tokens, completion_tokens=gen.completion_tokens, tool_statuses=statuses,
        train=all(s < 400 for s in statuses), seconds_generate=gen_seconds, seconds_env=env_seconds,
    )
