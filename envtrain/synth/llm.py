"""The chat client the synthesis engine and the rubric use: the shared one (envtrain.agent.chat) with
defaults for writing whole apps (long answers, low temperature, a patient timeout).

    client = ChatClient("http://127.0.0.1:8000/v1", "Qwen/Qwen3-32B")
    text = client.complete([{"role": "user", "content": "..."}])
"""

from __future__ import annotations

from typing import Any

from envtrain.agent.chat import ChatClient as _Chat
from envtrain.agent.chat import EndpointError as LLMError  # the engine and the rubric catch it by this name


class ChatClient(_Chat):
    def __init__(self, url: str, model: str, *, max_tokens: int = 8192, temperature: float = 0.2, timeout: float = 600.0,
                 retries: int = 2, transport: Any = None) -> None:
        super().__init__(url, model, timeout=timeout, retries=retries, max_tokens=max_tokens, temperature=temperature,
                         transport=transport)


__all__ = ["ChatClient", "LLMError"]
