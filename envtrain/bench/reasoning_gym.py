"""reasoning-gym: procedural reasoning datasets, scored by each dataset's own ``score_answer``.

``reasoning-gym:NAME`` takes the dataset's default configuration; ``reasoning-gym:NAME:LEVELS``
(``2``, ``0-3`` or ``0,2,4``) takes its curriculum at each global level, and a task's depth is
its level, so the by-depth tables and plots read as difficulty levels. ``NAME`` may be a comma
list (``chain_sum,leg_counting``): a composite run, each dataset its own group in the report.
An episode is one question: the model answers in text (``<answer>...</answer>`` as
reasoning-gym's default prompt asks, or the whole reply) or through the ``answer`` tool, which
ends the episode.
"""

from __future__ import annotations

from typing import Any, Sequence

from envtrain.agent.types import EpisodeContext, Generation, Message, ParsedTurn, Policy, SamplingParams, ToolCall
from envtrain.bench.loop import ChatLoop, ToolOutcome
from envtrain.bench.types import Episode, EpisodeLimits, Grade, TaskInfo

BENCHMARK = "reasoning-gym"
ANSWER_TOOL = {
    "type": "function",
    "function": {
        "name": "answer",
        "description": "Submit your final answer (exactly what the question asks for, nothing else). Ends the task.",
        "parameters": {"type": "object", "properties": {"answer": {"type": "string", "description": "the final answer"}},
                       "required": ["answer"]},
    },
}
DEFAULT_TURNS = 4  # a question, and room for a malformed answer call or two


class GymTask(TaskInfo):
    dataset: str
    level: int | None  # curriculum level; None: the dataset's default configuration
    index: int
    question: str
    answer: str | None  # the dataset's gold answer (None where it has several and checks instead)


def parse_levels(text: str) -> list[int]:
    """``2`` -> [2]; ``0-3`` -> [0, 1, 2, 3]; ``0,2`` -> [0, 2]."""
    levels: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"levels are N, A-B or a comma list of them, got {text!r}")
        levels.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    return sorted(set(levels))


class ReasoningGymAdapter:
    def __init__(self, dataset: str | Sequence[str], levels: list[int] | None = None, *, size: int = 20, seed: int = 0) -> None:
        import reasoning_gym
        from reasoning_gym.factory import DATASETS, has_curriculum

        names = [d.strip() for d in dataset.split(",")] if isinstance(dataset, str) else list(dataset)
        if not names or not all(names) or len(set(names)) != len(names):
            raise ValueError(f"reasoning-gym datasets are NAME or a comma list of distinct names, got {dataset!r}")
        for name in names:
            if name not in DATASETS:
                raise ValueError(f"reasoning-gym has no dataset {name!r} ({len(DATASETS)} datasets, e.g. {', '.join(sorted(DATASETS)[:5])})")
            if levels and not has_curriculum(name):
                raise ValueError(f"reasoning-gym dataset {name!r} has no curriculum, so it takes no levels")
        self.datasets, self.levels, self.size, self.seed = tuple(names), levels, size, seed
        self.version = getattr(reasoning_gym, "__version__", "")
        self.name = f"{BENCHMARK}:{','.join(names)}" + (f":{','.join(map(str, levels))}" if levels else "")
        self._data: dict[tuple[str, int | None], Any] = {}
        self._tasks: list[GymTask] | None = None

    def _make(self, dataset: str, level: int | None) -> Any:
        from reasoning_gym.factory import DATASETS, create_curriculum, create_dataset

        if level is None:
            return create_dataset(dataset, seed=self.seed, size=self.size)
        curriculum = create_curriculum(dataset)
        curriculum.set_global_level(level)
        config = curriculum.generate_configuration({"seed": self.seed + level, "size": self.size})
        return DATASETS[dataset][0](config)

    def tasks(self) -> list[GymTask]:
        if self._tasks is None:
            tasks = []
            for dataset in self.datasets:
                for level in self.levels or [None]:
                    data = self._data.setdefault((dataset, level), self._make(dataset, level))
                    for i in range(len(data)):
                        item = data[i]
                        answer = item.get("answer")
                        tasks.append(GymTask(
                            id=f"{dataset}:{'default' if level is None else f'L{level}'}:{i}", benchmark=BENCHMARK,
                            group=dataset, depth=level or 0, source=f"reasoning-gym {self.version}", dataset=dataset,
                            level=level, index=i, question=item["question"], answer=None if answer is None else str(answer),
                        ))
            self._tasks = tasks
        return self._tasks

    def entry(self, task: GymTask) -> dict[str, Any]:
        return self._data[(task.dataset, task.level)][task.index]

    def fixture_policy(self) -> Policy:
        return GoldAnswerPolicy()

    async def episode(self, task: TaskInfo, policy: Policy, params: SamplingParams, limits: EpisodeLimits, attempt: int) -> Episode:
        from reasoning_gym.utils import SYSTEM_PROMPTS

        assert isinstance(task, GymTask)
        loop = ChatLoop(policy, params, task=task, attempt=attempt, max_turns=limits.max_turns or DEFAULT_TURNS,
                        max_episode_tokens=limits.max_episode_tokens, tools=[ANSWER_TOOL])
        system = SYSTEM_PROMPTS["default"] + "\nYou may instead submit the final answer with the `answer` tool."
        loop.messages.extend([{"role": "system", "content": system}, {"role": "user", "content": task.question}])
        submitted: list[str] = []

        def execute(calls: list[ToolCall]) -> list[ToolOutcome]:
            out = []
            for call in calls:
                value = call.arguments.get("answer") if isinstance(call.arguments, dict) else None
                if call.name != "answer":
                    out.append(ToolOutcome(f'{{"error": "unknown tool {call.name!r}: the only tool is answer"}}', 404))
                elif value is None or isinstance(value, (dict, list)):
                    out.append(ToolOutcome('{"error": "answer takes one string argument, answer"}', 400))
                elif not submitted:
                    submitted.append(str(value))
                    out.append(ToolOutcome('{"recorded": true}'))
            return out

        async def body() -> None:
            await loop.respond(execute, finished=lambda: bool(submitted))

        await loop.run(body, limits.max_seconds)
        return Episode(task=task, trajectory=loop.trajectory(task.id), native={"answer": submitted[0] if submitted else _text_answer(loop.messages)})

    def grade(self, episode: Episode) -> Grade:
        import time

        task = episode.task
        assert isinstance(task, GymTask)
        start = time.perf_counter()
        answer = episode.native.get("answer")
        data = self._data[(task.dataset, task.level)]
        detail: dict[str, Any] = {"answer": (answer or "")[:200]}
        try:
            score = float(data.score_answer(answer, self.entry(task))) if answer is not None else 0.0
        except Exception as exc:  # some scorers raise on an unparsable answer (prime_factorization): a wrong answer
            score, detail["error"] = 0.0, f"score_answer raised {type(exc).__name__}: {exc}"[:300]
        score = min(max(score, 0.0), 1.0)
        passed = score >= 1.0
        return Grade(passed=passed, score=score, items_passed=int(passed), items_total=1, detail=detail,
                     seconds=time.perf_counter() - start)


def _text_answer(messages: list[Message]) -> str | None:
    """The last assistant reply's answer: inside <answer> tags if it has them, else the whole text."""
    from reasoning_gym.utils import extract_answer

    for message in reversed(messages):
        if message.get("role") == "assistant" and message.get("content"):
            text = message["content"]
            tagged = extract_answer(text)
            return tagged if tagged is not None else text.strip()
    return None


class GoldAnswerPolicy:
    """Submits the dataset's gold answer through the answer tool: a fixture, never a model result."""

    name = "oracle"

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, ctx: EpisodeContext) -> list[Generation]:
        answer = getattr(ctx.env, "answer", None)
        if ctx.turn > 0 or answer is None:
            return [Generation(turn=ParsedTurn(content="I do not know."), text="I do not know.", finish_reason="stop") for _ in range(params.n)]
        turn = ParsedTurn(tool_calls=(ToolCall(id="call_0", name="answer", arguments={"answer": answer}),))
        return [Generation(turn=turn, text=f"answer({answer!r})", finish_reason="tool_calls") for _ in range(params.n)]

    async def aclose(self) -> None:
        return None
