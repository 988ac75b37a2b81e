"""Helpers for the HTTP tests: a scripted stdlib server (for status codes a real model never sends) and
a scripted policy (for completions a random tiny model never writes). Both are real HTTP / real Policy."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from envtrain.agent.parsers import parse_completion
from envtrain.agent.types import EpisodeContext, Generation, Message, SamplingParams

Reply = tuple[int, dict[str, str], Any]  # status, headers, JSON body (or bytes)


def ok_body(message: dict[str, Any] | None = None, n: int = 1, usage: dict[str, int] | None = None) -> dict[str, Any]:
    message = message or {"role": "assistant", "content": "hello"}
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "model": "stub",
        "choices": [{"index": i, "message": message, "finish_reason": "stop"} for i in range(n)],
        "usage": usage or {"prompt_tokens": 7, "completion_tokens": 3 * n, "total_tokens": 7 + 3 * n},
    }


class StubServer:
    """Answers POSTs with ``script(attempt, body)``; records each request's arrival time and body."""

    def __init__(self, script: Callable[[int, dict[str, Any]], Reply]) -> None:
        self.script = script
        self.arrivals: list[float] = []
        self.bodies: list[dict[str, Any]] = []
        lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                self._reply(200, {}, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with lock:
                    attempt = len(stub.arrivals)
                    stub.arrivals.append(time.monotonic())
                    stub.bodies.append(body)
                self._reply(*stub.script(attempt, body))

            def _reply(self, status: int, headers: dict[str, str], body: Any) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (a timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def attempts(self) -> int:
        return len(self.arrivals)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> StubServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ScriptedPolicy:
    """Says the given completion texts (cycled), parsed as a hermes model's; optional fixed latency."""

    def __init__(self, texts: list[str], delay: float = 0.0, name: str = "scripted") -> None:
        self.texts = texts
        self.delay = delay
        self.name = name
        self.calls = 0

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams,
                       ctx: EpisodeContext) -> list[Generation]:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        out = []
        for k in range(params.n):
            text = self.texts[(self.calls + k) % len(self.texts)]
            turn = parse_completion(text, "hermes")
            reason = "tool_calls" if turn.tool_calls else "stop"
            out.append(Generation(turn=turn, text=text, finish_reason=reason, prompt_tokens=11, completion_tokens=5))
        return out

    async def aclose(self) -> None:
        return None


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
