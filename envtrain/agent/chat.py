"""One small client for an OpenAI-compatible chat endpoint (a vLLM server, the project's own server, any
hosted API), for every part that asks a model for text: compose's LLM builder and diagnosis agent,
scale's LLM proposer, synth's engine and rubric. It keeps the running cost (calls, tokens, seconds),
retries only what a retry can fix (a failed connection, 429, 5xx) with doubling waits, and says what
went wrong in one sentence (EndpointError).

    chat = ChatClient("http://127.0.0.1:8000/v1", "Qwen/Qwen3-32B")
    text = chat.complete([{"role": "user", "content": "..."}])
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

RETRIED = (429, 500, 502, 503, 504)


class EndpointError(Exception):
    """The endpoint could not give an answer (unreachable, an HTTP error, no model listed)."""


class ChatClient:
    def __init__(self, url: str, model: str | None = None, *, timeout: float = 120.0, retries: int = 2,
                 max_tokens: int = 400, temperature: float = 0.7, transport: Any = None) -> None:
        import httpx

        self.url = url.rstrip("/")
        self._model = model
        self.retries = retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.client = httpx.Client(timeout=timeout, transport=transport)
        self.cost = {"calls": 0, "tokens": 0, "seconds": 0.0}

    @property
    def model(self) -> str:
        """The model named, or the endpoint's first model (``GET /models``)."""
        if self._model is None:
            try:
                data = self.client.get(f"{self.url}/models").json()["data"]
                self._model = str(data[0]["id"])
            except Exception as exc:  # noqa: BLE001 (any failure here is the endpoint's: one reason)
                raise EndpointError(f"the endpoint lists no model ({type(exc).__name__}: {exc})") from None
        return self._model

    def complete(self, chat: list[dict[str, str]]) -> str:
        """The assistant's text for ``chat``; EndpointError once the retries are spent."""
        import httpx

        body = {"model": self.model, "messages": chat, "max_tokens": self.max_tokens, "temperature": self.temperature}
        delay, error = 1.0, ""
        for attempt in range(self.retries + 1):
            start = time.perf_counter()
            try:
                response = self.client.post(f"{self.url}/chat/completions", json=body)
            except httpx.HTTPError as exc:
                error = f"the endpoint cannot be reached: {exc}"
            else:
                self.cost["calls"] += 1
                self.cost["seconds"] += time.perf_counter() - start
                if response.status_code == 200:
                    try:
                        data = response.json()
                        text = data["choices"][0]["message"].get("content") or ""
                    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                        raise EndpointError("the endpoint answered 200 without a chat completion") from None
                    usage = data.get("usage") or {}
                    self.cost["tokens"] += int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
                    return str(text)
                error = f"the endpoint answered HTTP {response.status_code}"
                if response.status_code not in RETRIED:
                    break
            if attempt < self.retries:
                time.sleep(delay)
                delay *= 2
        raise EndpointError(error)

    def take_cost(self) -> dict[str, float]:
        """The cost so far, and start counting afresh (per accepted child, per environment)."""
        cost, self.cost = self.cost, {"calls": 0, "tokens": 0, "seconds": 0.0}
        return cost

    def close(self) -> None:
        self.client.close()


def json_object(text: str) -> Any:
    """The JSON value of a model's answer: the whole text, a fenced block, or the outermost braces; None if
    none parses (models wrap JSON in prose and code fences)."""
    body = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1).strip()
    start, end = body.find("{"), body.rfind("}")
    try:
        return json.loads(body[start:end + 1]) if start >= 0 and end > start else None
    except ValueError:
        return None


__all__ = ["ChatClient", "EndpointError", "json_object"]
