"""The LLM proposer: any OpenAI-compatible endpoint writes the plan (RES §3.2, App. A).

The prompt holds the task specification (request, what the verifier checks), the environment's
access structure (untouched resources, views with their modes, columns, rows, layers and the
tokens they publish), the operator catalogue with each operator's parameter schema, and the
diagnostics of the previous attempts for this parent. The answer must be one JSON plan; it is
validated against the plan schema, and a refusal goes back to the repair loop as a ``plan``
diagnostic like any other rejection. Calls, tokens and seconds are recorded per child (App. A,
Table A2).
"""

from __future__ import annotations

import json
import re

import httpx

from envtrain.agent.chat import ChatClient, EndpointError
from envtrain.core.env import Environment
from envtrain.scale.apply import start_work
from envtrain.scale.build import fetch_tool
from envtrain.scale.model import TOKEN_LAYERS
from envtrain.scale.operators import library as operator_library
from envtrain.scale.operators.base import PlanError
from envtrain.scale.plan import Plan
from envtrain.scale.propose import Attempt, ProposalError

SYSTEM = (
    "You make agent environments harder without changing the task (Recursive Environment Scaling). "
    "You transform how the agent reaches the data: the request, the facts and the verifier never change. "
    'Answer with one JSON object and nothing else: a plan {"steps": [{"operator", "target", "params", "binds"}]}. '
    "Targets are view ids (L3) or untransformed resources (app.entity, files); the gating operators target a tool by "
    "name. Build on views and gates made in earlier rounds and compose dependencies: bind preparations (binds) to "
    "tokens other views (L3:export) or gates (G5:gate) already publish."
)


class LLMProposer:
    """Proposes by asking a model; keeps its own running cost (calls, tokens, seconds)."""

    name = "llm"

    def __init__(
        self,
        url: str,
        model: str,
        *,
        library: str = "full",
        release: bool = False,
        max_tokens: int = 2048,
        temperature: float = 0.7,
        timeout: float = 300.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.library = library
        self.release = release
        self.chat = ChatClient(url, model, timeout=timeout, retries=retries, max_tokens=max_tokens, temperature=temperature,
                               transport=transport)

    @property
    def cost(self) -> dict[str, float]:
        return self.chat.cost

    def take_cost(self) -> dict[str, float]:
        return self.chat.take_cost()

    def propose(self, parent: Environment, history: list[Attempt]) -> tuple[Plan, None]:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt(parent, history, self.library)}]
        try:
            text = self.chat.complete(messages)
        except EndpointError as exc:
            raise ProposalError(str(exc)) from None
        return parse_answer(text, parent, self.release), None


def prompt(parent: Environment, history: list[Attempt], library: str) -> str:
    work = start_work(parent)
    lines = [
        "# Task (fixed)",
        parent.request,
        "",
        "The verifier checks: " + "; ".join(a.name or a.describe() for a in parent.verifier.positive + parent.verifier.negative),
        "",
    ]
    lines.append("# Untransformed resources (target them by key)")
    for key, original in sorted(work.originals().items()):
        if key not in work.resources:
            lines.append(
                f"- {key}: {len(original.records)} records, fields {[n for n, _ in original.fields]}, key {original.record_key}"
                f"{', read by the reference solution' if original.needed else ''}"
            )
    lines.append("")
    lines.append("# Views (target them by id)")
    for leaf in work.leaves.values():
        layers = [layer.kind for layer in leaf.layers]
        tokens = [f"{leaf.id}:{k}" for k in layers if k in TOKEN_LAYERS]
        lines.append(
            f"- {leaf.id} `{fetch_tool(leaf)}` ({leaf.resource}: {leaf.role}), {leaf.mode} mode, "
            f"{len(work.payloads[leaf.id])} rows, "
            f"columns {[n for n, _ in leaf.columns]}, key {leaf.key}, layers {layers}, made in round {leaf.depth}"
            + (f", publishes {tokens}" if tokens else "")
        )
    gates = list(work.gates.values())
    targets = [t for t in work.tools.values() if t.gold and not t.records]
    if targets or gates:
        lines.append("")
        lines.append("# Tools the gating operators can hold (target them by name; envtrain's operators beyond RES's 17)")
        for tool in targets:
            held = [g for g in gates if g.tool == tool.name]
            text = f"- {tool.name} ({tool.app})"
            if held:
                text += f", gates {[f'{g.id} {g.kind}' for g in held]}, publishing {[f'{g.id}:gate' for g in held]}"
            lines.append(text)
    lines.append("")
    lines.append("# Operators")
    for op in operator_library(library).values():
        schema = op.Params.model_json_schema().get("properties", {})
        params = {
            k: {kk: vv for kk, vv in v.items() if kk in ("type", "enum", "minimum", "maximum", "default")}
            for k, v in schema.items()
        }
        lines.append(f"- {op.name}: {op.summary}. params {json.dumps(params)}; binds at most {op.max_binds}")
    failed = [a for a in history if not a.accepted]
    if failed:
        lines.append("")
        lines.append("# Your previous plans for this environment were rejected")
        for a in failed[-3:]:
            steps = json.dumps([s.model_dump(mode="json") for s in a.plan.steps]) if a.plan else "(no plan)"
            lines.append(f"- {steps}: " + " | ".join(a.diagnostics[:4]))
    lines.append("")
    lines.append("Answer with the JSON plan only (1 to 3 steps).")
    return "\n".join(lines)


def parse_answer(text: str, parent: Environment, release: bool) -> Plan:
    """The plan in a model's answer (a bare object or a ```json block); ProposalError says what is wrong."""
    match = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    raw = match.group(1) if match else text[text.find("{") : text.rfind("}") + 1]
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProposalError(f"the answer is not a JSON plan ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ProposalError("the answer is not a JSON object")
    data = {**data, "parent": parent.id, "proposer": "llm", "release_dependencies": release}
    try:
        return Plan.parse(data, source="the answer")
    except PlanError as exc:
        raise ProposalError(str(exc)) from None
