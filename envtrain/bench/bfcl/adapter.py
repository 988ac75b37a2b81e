"""BFCL v4 multi-turn as a benchmark: BFCL's API classes run the episode, BFCL's checker grades it.

The episode follows BFCL's own inference loop for function-calling models
(``BaseHandler.inference_multi_turn_FC``): the user turns arrive in order; within a turn the
model calls tools until it replies without a call; each call is decoded to BFCL's executable
form (``convert_to_function_call``) and run by BFCL's executor; at a miss_func turn the held-out
docs join the tools and the user says BFCL's "I have updated some more functions"; more than
20 steps in one turn (``MAXIMUM_STEP_LIMIT``) ends the entry, which then fails. The calls per
step go to ``multi_turn_checker`` exactly as BFCL's eval runner passes them.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Sequence

from envtrain.agent.types import EpisodeContext, Generation, Message, ParsedTurn, Policy, SamplingParams, ToolCall
from envtrain.bench.bfcl.data import CATEGORIES, BFCLEntry, call_text, load_entries, parse_gold, to_openai_tools
from envtrain.bench.bfcl.executor import EpisodeExecutor, native_check
from envtrain.bench.loop import ChatLoop, ToolOutcome
from envtrain.bench.types import Episode, EpisodeLimits, Grade, TaskInfo

BENCHMARK = "bfcl-multi-turn"


class BFCLTask(TaskInfo):
    entry: BFCLEntry


def _status(result: str) -> int:
    # BFCL's two failure shapes: eval raised (its prefix), or the API answered {"error": ...}.
    if result.startswith("Error during execution"):
        return 400
    if result.startswith("{"):
        try:
            value = json.loads(result)
        except ValueError:
            return 200
        if isinstance(value, dict) and "error" in value:
            return 400
    return 200


class BFCLAdapter:
    """``bfcl-multi-turn`` (all four categories, 800 entries) or ``bfcl-multi-turn:CATEGORY[,CATEGORY]``."""

    def __init__(self, categories: Sequence[str] = CATEGORIES, *, limit: int | None = None) -> None:
        unknown = [c for c in categories if c not in CATEGORIES]
        if unknown:
            raise ValueError(f"unknown BFCL multi-turn category {unknown[0]!r} (categories: {', '.join(CATEGORIES)})")
        self.categories = tuple(categories)
        self.name = BENCHMARK if self.categories == CATEGORIES else f"{BENCHMARK}:{','.join(self.categories)}"
        self.limit = limit
        self._tasks: list[BFCLTask] | None = None

    def tasks(self) -> list[BFCLTask]:
        if self._tasks is None:
            from importlib.metadata import version

            source = f"bfcl-eval {version('bfcl-eval')}"
            tasks = []
            for category in self.categories:
                entries = load_entries(category)
                for entry in entries[: self.limit] if self.limit else entries:
                    tasks.append(BFCLTask(id=entry.id, benchmark=BENCHMARK, group=category, source=source, entry=entry))
            self._tasks = tasks
        return self._tasks

    def fixture_policy(self) -> Policy:
        return GoldReplayPolicy()

    async def episode(self, task: TaskInfo, policy: Policy, params: SamplingParams, limits: EpisodeLimits, attempt: int) -> Episode:
        from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC, MAXIMUM_STEP_LIMIT

        assert isinstance(task, BFCLTask)
        entry = task.entry
        functions = copy.deepcopy(entry.functions)
        # BFCL's protocol has no episode-wide turn cap (only its per-turn step limit) unless one is asked for.
        loop = ChatLoop(policy, params, task=task, attempt=attempt, max_turns=limits.max_turns,
                        max_episode_tokens=limits.max_episode_tokens, tools=to_openai_tools(functions))
        decoded: list[list[list[str]]] = []
        executor = EpisodeExecutor(entry)

        def execute(calls: list[ToolCall]) -> list[ToolOutcome] | None:
            if any(not isinstance(c.arguments, dict) for c in calls):
                return None  # BFCL cannot decode the reply: the turn ends, as in its loop
            texts = [call_text(c.name, c.arguments) for c in calls]  # type: ignore[arg-type]
            results = executor.execute(texts)
            decoded[-1].append(texts)
            return [ToolOutcome(r, _status(r)) for r in results]

        async def body() -> None:
            nonlocal functions
            for turn, messages in enumerate(entry.question):
                held_out = entry.missed_function.get(str(turn))
                if held_out is not None:
                    functions = functions + copy.deepcopy(held_out)
                    loop.tools = to_openai_tools(functions)
                    messages = [{"role": "user", "content": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC}]
                loop.messages.extend(copy.deepcopy(messages))
                decoded.append([])  # kept even when the run stops inside it, as BFCL appends the turn before quitting
                await loop.respond(execute, step_limit=MAXIMUM_STEP_LIMIT, extra={"user_turn": turn})
                if loop.stopped:
                    return

        try:
            await loop.run(body, limits.max_seconds)
        finally:
            executor.close()
        return Episode(task=task, trajectory=loop.trajectory(task.id), native={"decoded": decoded})

    def grade(self, episode: Episode) -> Grade:
        assert isinstance(episode.task, BFCLTask)
        verdict = native_check(episode.task.entry, episode.native["decoded"])
        detail = {"error_type": verdict.error_type, "error_message": verdict.error_message[:500]} if not verdict.valid else {}
        return Grade(passed=verdict.valid, score=float(verdict.valid), items_passed=int(verdict.valid), items_total=1,
                     detail=detail, seconds=verdict.seconds)


class GoldReplayPolicy:
    """Replays BFCL's gold calls: all of a user turn's calls in its first step, then "Done.".
    A fixture that checks the adapter's wiring, labelled so in every output; never a model result."""

    name = "oracle"

    def __init__(self) -> None:
        self._parameters: dict[tuple[str, ...], dict[str, list[str]]] = {}

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, ctx: EpisodeContext) -> list[Generation]:
        task = ctx.env
        turn, step = ctx.extra.get("user_turn", 0), ctx.extra.get("step", 0)
        gold = task.entry.ground_truth[turn] if isinstance(task, BFCLTask) and turn < len(task.entry.ground_truth) else []
        if step > 0 or not gold:
            text = "Done."
            return [Generation(turn=ParsedTurn(content=text), text=text, finish_reason="stop") for _ in range(params.n)]
        names = self._names(task.entry.involved_classes)
        calls = tuple(ToolCall(id=f"call_{turn}_{i}", name=g.name, arguments=g.arguments)
                      for i, g in enumerate(parse_gold(text, names) for text in gold))
        parsed = ParsedTurn(tool_calls=calls)
        return [Generation(turn=parsed, text="\n".join(gold), finish_reason="tool_calls") for _ in range(params.n)]

    def _names(self, classes: list[str]) -> dict[str, list[str]]:
        from envtrain.bench.bfcl.env import method_parameters

        key = tuple(classes)
        if key not in self._parameters:  # per policy instance: signatures do not change within a run
            self._parameters[key] = method_parameters(classes)
        return self._parameters[key]

    async def aclose(self) -> None:
        return None
