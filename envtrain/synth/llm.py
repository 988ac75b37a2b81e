"""The chat client the synthesis engine and the rubric use: any OpenAI-compatible endpoint.

    client = ChatClient("http://127.0.0.1:8000/v1", "Qwen/Qwen3-32B")
    text = client.complete([{"role": "user", "content": "..."}])

Retries (with doubling waits) only what a retry can fix: a connection that failed, 429 and 5xx.
Calls, tokens and seconds are counted per client (``cost``), for the run's report.
"""

from __future__ import annotations

import time
from typing import Any

import httpx


class LLMError(RuntimeError):
    """The endpoint gave no usable answer; the message says why, in one sentence."""


class ChatClient:
    def __init__(self, url: str, model: str, *, max_tokens: int = 8192, temperature: float = 0.2, timeout: float = 600.0,
                 retries: int = 2, transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.retries = retries
        self.client = httpx.Client(timeout=timeout, transport=transport)
        self.cost: dict[str, float] = {"calls": 0, "tokens": 0, "seconds": 0.0}

    def complete(self, messages: list[dict[str, str]]) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens, "temperature": self.temperature}
        delay, error = 1.0, "no attempt was made"
        for attempt in range(self.retries + 1):
            start = time.perf_counter()
            try:
                response = self.client.post(f"{self.url}/chat/completions", json=body)
            except httpx.HTTPError as exc:
                error = f"the endpoint {self.url} cannot be reached: {exc}"
            else:
                self.cost["calls"] += 1
                self.cost["seconds"] += time.perf_counter() - start
                if response.status_code == 200:
                    try:
                        data = response.json()
                        text = data["choices"][0]["message"].get("content") or ""
                    except (ValueError, KeyError, IndexError, TypeError):
                        raise LLMError(f"the endpoint {self.url} answered 200 without a chat completion") from None
                    usage = data.get("usage") or {}
                    self.cost["tokens"] += int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
                    return str(text)
                error = f"the endpoint {self.url} answered HTTP {response.status_code}"
                if response.status_code not in (429, 500, 502, 503, 504):
                    break
            if attempt < self.retries:
                time.sleep(delay)
                delay *= 2
        raise LLMError(error)

    def close(self) -> None:
        self.client.close()
