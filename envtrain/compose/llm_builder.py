"""The LLM builder mode (LegoEnv §3.4 uses an LLM agent to build from a skeleton): any OpenAI-compatible
endpoint writes the request q of an environment the programmatic builder has made.

The model gets the skeleton's workflow, where the policy is (the carrier's pointer), which records to
work through, the deliverables, and the programmatic request as a plain draft; it never sees the rule.
It answers with one JSON object ``{"request": "..."}``. The answer is checked before anything is
admitted, and a rejected answer goes back to the model with the reason, up to ``budget`` answers:

- the JSON schema (one object, one string field, 20 to 2,000 characters);
- it names every anchor the agent needs to find its way: the quoted names, codes, paths, channels and
  addresses of the carrier's pointer and of the records' location, today's date where the rule needs it,
  and the records' noun;
- it does not restate the rule: no number the rule text states, no run of six words taken from the rule
  text, no outcome of a routing rule (each unless the draft says it too);
- the unstated-value guard (guard.py) on the new environment: the request names no value that nothing
  states.
Admission (the five conditions) then runs on the result exactly as on the programmatic builder's.

The accepted request is kept in the manifest, so rebuilding that index after a crash reuses it instead
of asking again: a resumed run stays exact.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from envtrain.agent.chat import ChatClient, EndpointError, json_object
from envtrain.compose.builder import Built
from envtrain.compose.context import Unbuildable
from envtrain.compose.guard import unstated_values
from envtrain.core.env import Environment

SYSTEM = (
    "You write the user's request for a task in business applications. An assistant will carry it out with tools. "
    "The rules for the task are written in a policy the assistant must find and read itself: never state the "
    "policy's conditions, values, thresholds or outcomes. Name where the policy is and which records to work "
    "through, using the exact names given. Write one to four natural sentences, as a colleague would ask. "
    'Answer with one JSON object and nothing else: {"request": "..."}.'
)
MIN_CHARS, MAX_CHARS = 20, 2000
SHINGLE = 6  # words in a row shared with the rule text that count as restating it

_QUOTED = re.compile(r'"([^"]+)"')
_TOKEN = re.compile(r"[^\s,;()]+")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,:/-]\d+)*(?![\w])")
_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


class RequestWriter:
    """Asks an OpenAI-compatible endpoint for the request; keeps its running cost (calls, tokens, seconds)."""

    def __init__(self, url: str, model: str | None = None, *, budget: int = 3, timeout: float = 120.0, retries: int = 2,
                 max_tokens: int = 400, temperature: float = 0.7, transport: Any = None) -> None:
        self.chat = ChatClient(url, model, timeout=timeout, retries=retries, max_tokens=max_tokens,
                               temperature=temperature, transport=transport)
        self.budget = budget
        self.cost = self.chat.cost

    @property
    def model(self) -> str:
        """The model named, or the endpoint's first model (``GET /models``)."""
        try:
            return self.chat.model
        except EndpointError as exc:
            raise Unbuildable(f"llm builder: {exc}") from None

    def write(self, built: Built, recorded: str | None = None) -> tuple[Built, dict[str, Any]]:
        """The environment with the model's request, and a record of the exchange; Unbuildable after ``budget``
        rejected answers. ``recorded``: a request accepted before (from the manifest), reused without a call."""
        if recorded is not None:
            candidate, problem = try_request(built, recorded, self.model)
            if candidate is not None:
                return candidate, {"model": self.model, "answers": 0, "rejected": [], "request": recorded, "replayed": True}
        history: list[tuple[str, str]] = []
        for _ in range(self.budget):
            text = self.complete(messages(built, history))
            try:
                request = parse_answer(text)
            except ValueError as exc:
                history.append((text, str(exc)))
                continue
            candidate, problem = try_request(built, request, self.model)
            if candidate is None:
                history.append((text, problem or "rejected"))
                continue
            return candidate, {"model": self.model, "answers": len(history) + 1, "rejected": [r for _, r in history],
                               "request": request}
        raise Unbuildable(f"llm builder: no acceptable request in {self.budget} answers (last: {history[-1][1]})")

    def complete(self, chat: list[dict[str, str]]) -> str:
        try:
            return self.chat.complete(chat)
        except EndpointError as exc:
            raise Unbuildable(f"llm builder: {exc}") from None

    def close(self) -> None:
        self.chat.close()


def messages(built: Built, history: list[tuple[str, str]]) -> list[dict[str, str]]:
    parts, sk = built.parts, built.skeleton
    lines = [
        f"Workflow: {sk.domain} ({sk.chain}).",
        f"The policy the assistant must read: {parts['pointer']}.",
        f"The records to work through: {parts['where']}.",
    ]
    if parts.get("asks"):
        lines.append("Deliverables to ask for: " + "; ".join(parts["asks"]) + ".")
    if parts.get("today"):
        lines.append(f"Today's date, which the request must give: {parts['today']}.")
    lines.append("Names the request must contain exactly: " + ", ".join(repr(a) for a in anchors(parts)) + ".")
    lines.append(f"Draft request (correct but plain):\n{built.env.request}")
    if history:
        lines.append("Your previous answers were rejected:")
        lines.extend(f"- {text.strip()[:300]!r}: {reason}" for text, reason in history)
        lines.append("Write a new request that fixes this.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def parse_answer(text: str) -> str:
    """The request from the model's answer, or ValueError with what is wrong with it."""
    value = json_object(text)
    if not isinstance(value, dict):
        raise ValueError('the answer is not a JSON object {"request": "..."}')
    if set(value) != {"request"} or not isinstance(value["request"], str):
        raise ValueError(f'the object must have exactly one string field, request (it has: {", ".join(sorted(value)) or "none"})')
    request = " ".join(value["request"].split())
    if not MIN_CHARS <= len(request) <= MAX_CHARS:
        raise ValueError(f"the request has {len(request)} characters (between {MIN_CHARS} and {MAX_CHARS})")
    return request


def anchors(parts: dict[str, Any]) -> list[str]:
    """What the agent needs to find the policy and the records: quoted names, and the codes, paths,
    channels and addresses of the pointer and the location; today's date where given."""
    out: list[str] = []
    for text in (parts["pointer"], parts["where"]):
        quoted = _QUOTED.findall(text)
        out.extend(quoted)
        bare = _QUOTED.sub(" ", text)
        out.extend(t.rstrip(".") for t in _TOKEN.findall(bare) if any(c.isdigit() or c in "/#@" for c in t))
    if parts.get("today"):
        out.append(str(parts["today"]))
    return list(dict.fromkeys(a for a in out if a))


def check_request(request: str, parts: dict[str, Any], draft: str) -> list[str]:
    """Why a proposed request cannot be used (empty: it can)."""
    low = request.lower()
    problems = [f"it does not name {a!r}, which the assistant needs to find the policy or the records"
                for a in anchors(parts) if a.lower() not in low]
    if parts["noun"].lower() not in low:
        problems.append(f"it does not say which records to work through (the {parts['plural']})")
    rule, allowed = parts["rule"], draft + " " + parts["pointer"] + " " + parts["where"]
    for number in dict.fromkeys(_NUMBER.findall(rule)):
        if _says(number, request) and not _says(number, allowed):
            problems.append(f"it states {number!r}, a value of the policy: the assistant must read the policy, not be told it")
    for value in parts.get("route_values", ()):
        if len(str(value)) >= 3 and _says(str(value), request) and not _says(str(value), allowed):
            problems.append(f"it names the outcome {value!r}, which only the policy may state")
    words = _WORD.findall(rule.lower())
    said, given = " ".join(_WORD.findall(low)), " ".join(_WORD.findall(allowed.lower()))
    for i in range(len(words) - SHINGLE + 1):
        run = " ".join(words[i:i + SHINGLE])
        if f" {run} " in f" {said} " and f" {run} " not in f" {given} ":  # the draft's own words are not the rule's
            problems.append(f"it repeats the policy's words ({run!r}): the request must not restate the rule")
            break
    return problems


def try_request(built: Built, request: str, model: str) -> tuple[Built | None, str | None]:
    """The environment with ``request``, guarded; or None and the first reason it is refused."""
    problems = check_request(request, built.parts, built.env.request)
    if problems:
        return None, problems[0]
    doc = built.env.model_dump(mode="json", exclude={"id"})
    doc["request"] = request
    doc["provenance"]["settings"]["builder"] = {"kind": "llm", "model": model}
    env = Environment.parse(doc, source=f"compose {built.skeleton.domain} (llm builder)")
    stated = (request, *built.stated[1:])
    faults = unstated_values(env, stated)
    if faults:
        return None, f"unstated value: {faults[0]}"
    return replace(built, env=env, stated=stated), None


def _says(value: str, text: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(value.lower()) + r"(?![\w])", text.lower()) is not None


__all__ = ["RequestWriter", "anchors", "check_request", "messages", "parse_answer", "try_request"]
