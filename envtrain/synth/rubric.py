"""The LLM part of the EnvCraft inspector: Table 18's rubric, scored by a model, kept at 3 / 3 / >= 2.

The model reads the task record (request, persona, docs, tools, the initial workspace, the
verifier and the reference solution) and scores three dimensions 0-3 with the paper's level
descriptions. Used only when an endpoint is configured; the programmatic checks in
``envtrain.synth.inspect`` run either way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from envtrain.core.env import Environment
from envtrain.synth.llm import ChatClient, LLMError

DIMENSIONS = ("solvability", "validation", "consistency")
KEEP = {"solvability": 3, "validation": 3, "consistency": 2}  # a candidate is kept at 3, 3 and at least 2

RUBRIC = """Score the task record on three dimensions, each an integer 0-3 (EnvCraft Table 18).

solvability (Task Solvability & Logic)
3: logically valid, non-trivial, fully solvable under the initial state and environment rules; completing it requires meaningful interaction, with no state conflicts.
2: theoretically solvable but trivial, requires no meaningful interaction, or contains minor parameter mismatches that a robust agent may bypass.
1: unsolvable because its requested actions or target state contradict the initial state, environment constants, or transition rules.
0: substantially hallucinates entities, tools, APIs, or states that are absent from the environment.

validation (Validation-Protocol Integrity)
3: the validation protocol is executable and completely checks the intended success conditions, without evident false-positive or false-negative paths.
2: executable, but its assertions are incomplete or weak; for example, it verifies that an action occurred without checking the required final state.
1: contains syntax or runtime errors, references undefined variables or APIs, or is expected to fail during execution.
0: missing or evaluates conditions unrelated to the user task.

consistency (Data Consistency & Syntactic Cleanliness)
3: entity names, identifiers, value types, and schemas are fully consistent across the environment state, user task, and validation protocol.
2: semantically consistent but with minor type or formatting mismatches that do not fundamentally alter the task objective.
1: critical fields are missing, or explicit contradictions exist between the user-facing description and the underlying environment configuration.
0: malformed JSON, severely corrupted text, or otherwise unusable structured data.

Answer with one JSON object: {"solvability": n, "validation": n, "consistency": n, "reasons": "one or two sentences"}."""

MAX_FILE_CHARS = 2_000  # of each workspace file shown to the judge


@dataclass(frozen=True)
class RubricScore:
    solvability: int | None
    validation: int | None
    consistency: int | None
    reasons: str = ""

    @property
    def kept(self) -> bool:
        return all(getattr(self, d) is not None and getattr(self, d) >= KEEP[d] for d in DIMENSIONS)

    def to_dict(self) -> dict[str, int | None]:
        return {d: getattr(self, d) for d in DIMENSIONS}


def record(env: Environment) -> str:
    """The task record as the judge reads it."""
    lines = [f"# Request\n{env.request}", f"# Persona\n{json.dumps(env.persona, sort_keys=True)}"]
    lines += [f"# Doc: {d.title}\n{d.body}" for d in env.docs]
    lines.append("# Tools")
    for app in env.apps:
        for tool in app.tools:
            lines.append(f"- {tool.name} ({tool.family}): {tool.description} parameters {json.dumps(tool.parameters, sort_keys=True)}")
    lines.append("# Initial workspace files")
    for path, text in sorted(env.world.files.items()):
        shown = text if len(text) <= MAX_FILE_CHARS else text[:MAX_FILE_CHARS] + f"\n... ({len(text)} characters)"
        lines.append(f"## {path}\n{shown}")
    for name, rows in sorted(env.world.tables.items()):
        lines.append(f"## table {name} ({len(rows)} rows)\n" + "\n".join(json.dumps(r, sort_keys=True) for r in rows[:20]))
    lines.append("# Validation protocol")
    lines += [f"- V+ {a.name or a.describe()}: {a.describe()}" for a in env.verifier.positive]
    lines += [f"- V- {a.name or a.describe()}: {a.describe()}" for a in env.verifier.negative]
    lines += [f"- check {c.name!r} (a script over the final workspace):\n{c.script}" for c in env.verifier.checks]
    lines.append("# Reference solution")
    lines += [f"{i}. {c.tool} {json.dumps(c.arguments, sort_keys=True)}" for i, c in enumerate(env.reference_solution)]
    return "\n".join(lines)


def parse_score(text: str) -> RubricScore:
    match = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        return RubricScore(None, None, None, "the judge's answer is not a JSON object")
    values = {}
    for d in DIMENSIONS:
        v = data.get(d)
        values[d] = v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 3 else None
    missing = [d for d, v in values.items() if v is None]
    reasons = str(data.get("reasons", ""))[:400] + (f" (no score for {', '.join(missing)})" if missing else "")
    return RubricScore(values["solvability"], values["validation"], values["consistency"], reasons.strip())


def score(env: Environment, client: ChatClient) -> RubricScore:
    messages = [{"role": "system", "content": "You audit synthesized agent tasks for a training set. " + RUBRIC},
                {"role": "user", "content": record(env)}]
    try:
        return parse_score(client.complete(messages))
    except LLMError as exc:
        return RubricScore(None, None, None, f"no score: {exc}")
