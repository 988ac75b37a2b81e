"""A small OpenAI-compatible chat-completions server over any ``Policy`` (standard library only).

    python -m envtrain.agent.server MODEL_DIR --port 8000     # HFPolicy on a local model dir
    server = serve(policy)                                    # in-process; port 0 picks a free one
    OpenAIPolicy([server.url]) ...; server.close()

What vLLM serve is to a GPU cluster, this is to tests and CPU demos: the HTTP path end to end,
without mocks. Endpoints: ``GET /v1/models``, ``GET /health``, ``POST /v1/chat/completions``
(non-streaming; ``n``, ``tools``, ``logprobs``, and vLLM's ``return_token_ids``).

HTTP requests are handled on threads (``ThreadingHTTPServer``); the policy's coroutines all run
on one event loop in a thread of its own, so an async policy sees one loop, as it would in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import ValidationError

from envtrain.agent.openai_format import error_body, generation_to_choice
from envtrain.agent.types import EpisodeContext, Policy, SamplingParams

MAX_BODY = 64 * 1024 * 1024


class BadRequest(ValueError):
    """A request the server refuses with HTTP 400."""


def sampling_params(body: dict[str, Any]) -> SamplingParams:
    """The request's sampling fields as ``SamplingParams``; a bad value is a ``BadRequest``."""
    stop = body.get("stop")
    fields: dict[str, Any] = {
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "max_tokens": body.get("max_completion_tokens", body.get("max_tokens")),
        "n": body.get("n"),
        "seed": body.get("seed"),
        "stop": (stop,) if isinstance(stop, str) else tuple(stop) if isinstance(stop, list) else stop,
    }
    try:
        return SamplingParams(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadRequest(f"invalid {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc


def parse_request(body: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], SamplingParams]:
    """Messages, tools and sampling settings from a chat-completions body, or a ``BadRequest``."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    if body.get("stream"):
        raise BadRequest("streaming is not supported by this server; send stream=false")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise BadRequest(f"messages[{i}] must be an object with a string 'role'")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise BadRequest("'tools' must be a list")
    for i, t in enumerate(tools):
        if not isinstance(t, dict) or not isinstance((t.get("function") or {}).get("name"), str):
            raise BadRequest(f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}")
    if body.get("tool_choice") == "none":
        tools = []  # the model may not call tools: do not show it any
    return messages, tools, sampling_params(body)


class _App:
    """What every request thread shares: the policy, its event loop, and a few counters."""

    def __init__(self, policy: Policy, model: str, request_timeout: float) -> None:
        self.policy = policy
        self.model = model
        self.request_timeout = request_timeout
        self.loop = asyncio.new_event_loop()
        self.loop_thread = threading.Thread(target=self.loop.run_forever, name="envtrain-policy-loop", daemon=True)
        self.loop_thread.start()
        self.lock = threading.Lock()
        self.completions = 0  # chat completions answered (any status)
        self.inflight = 0
        self.max_inflight = 0
        tokenizer = getattr(policy, "tokenizer", None)
        self.token_text: Callable[[int], str] | None = (lambda i: tokenizer.decode([i])) if tokenizer is not None else None

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=self.request_timeout)

    def chat_completion(self, body: Any) -> dict[str, Any]:
        messages, tools, params = parse_request(body)
        ctx = EpisodeContext(env=None)
        started = time.time()
        generations = self.run(self.policy.generate(messages, tools, params, ctx))
        want_ids = bool(body.get("return_token_ids"))
        choices = [generation_to_choice(i, g, logprobs=bool(body.get("logprobs")), token_ids=want_ids, token_text=self.token_text)
                   for i, g in enumerate(generations)]
        prompt_tokens = generations[0].prompt_tokens if generations else 0
        completion_tokens = sum(g.completion_tokens for g in generations)
        response: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(started),
            "model": body.get("model") or self.model,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }
        if want_ids and generations and generations[0].prompt_token_ids is not None:
            response["prompt_token_ids"] = list(generations[0].prompt_token_ids)
        return response

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "envtrain"}]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse connections as they would with vLLM
    disable_nagle_algorithm = True  # headers and body go out as two writes: Nagle + delayed ACK would add ~40 ms each
    app: _App  # set on the per-server subclass

    def log_message(self, format: str, *args: Any) -> None:
        return None  # one line per request on stderr would drown test and benchmark output

    def _send(self, status: int, doc: dict[str, Any]) -> None:
        data = json.dumps(doc, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._send(200, self.app.models())
        elif path in ("/health", "/v1/health"):
            self._send(200, {"status": "ok"})
        else:
            self._send(404, error_body(f"no route GET {path}", "not_found_error"))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True  # the body stays unread: this connection cannot be reused
            self._send(413, error_body(f"request body over {MAX_BODY} bytes"))
            return
        raw = self.rfile.read(length) if length else b""
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, error_body(f"no route POST {path}", "not_found_error"))
            return
        app = self.app
        with app.lock:
            app.completions += 1
            app.inflight += 1
            app.max_inflight = max(app.max_inflight, app.inflight)
        try:
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError as exc:
                raise BadRequest(f"the request body is not JSON: {exc.msg}") from exc
            self._send(200, app.chat_completion(body))
        except BadRequest as exc:
            self._send(400, error_body(str(exc)))
        except Exception as exc:  # the policy failed: a 5xx, which clients retry
            self._send(500, error_body(f"{type(exc).__name__}: {exc}", "server_error"))
        finally:
            with app.lock:
                app.inflight -= 1


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a hung client must not keep the process alive at exit
    request_queue_size = 1024  # the stdlib's 5 drops connections past 5 at once: clients stall a second re-sending SYN


class RunningServer:
    """A server running in background threads; ``close()`` (or ``with``) stops it."""

    def __init__(self, httpd: ThreadingHTTPServer, app: _App, own_policy: bool) -> None:
        self._httpd = httpd
        self._app = app
        self._own_policy = own_policy
        # A short poll interval: close() waits up to one interval for the serving loop to notice.
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="envtrain-openai-server", daemon=True)
        self._thread.start()
        host, port = httpd.server_address[:2]
        self.host, self.port = str(host), int(port)
        self.url = f"http://{self.host}:{self.port}/v1"
        self.model = app.model

    @property
    def completions(self) -> int:
        """Chat-completion requests received so far (for load-spreading checks)."""
        return self._app.completions

    @property
    def max_inflight(self) -> int:
        """The most chat completions this server had in progress at once."""
        return self._app.max_inflight

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)
        app = self._app
        if self._own_policy:
            asyncio.run_coroutine_threadsafe(app.policy.aclose(), app.loop).result(timeout=60)
        app.loop.call_soon_threadsafe(app.loop.stop)
        app.loop_thread.join(timeout=10)
        app.loop.close()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(
    policy: Policy,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    model_name: str | None = None,
    request_timeout: float = 600.0,
    own_policy: bool = False,
) -> RunningServer:
    """Serve ``policy`` at ``http://host:port/v1`` from background threads; returns at once.

    ``own_policy``: ``close()`` also closes the policy (the CLI's case).
    """
    app = _App(policy, model_name or policy.name, request_timeout)
    handler = type("EnvtrainOpenAIHandler", (_Handler,), {"app": app})
    try:
        httpd = _HTTPServer((host, port), handler)
    except OSError:
        app.loop.call_soon_threadsafe(app.loop.stop)
        raise
    return RunningServer(httpd, app, own_policy)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m envtrain.agent.server", description=__doc__.split("\n")[0])
    parser.add_argument("model_dir", help="a local Hugging Face model folder (served with HFPolicy)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--name", default=None, help="the model name /v1/models reports (default: the folder name)")
    args = parser.parse_args(argv)

    from pathlib import Path

    from envtrain.agent.hf import HFPolicy

    model_dir = Path(args.model_dir)
    if not model_dir.is_dir():
        parser.exit(2, f"error: {model_dir}: no such model folder\n")
    server = serve(HFPolicy(str(model_dir)), args.host, args.port, model_name=args.name or model_dir.name, own_policy=True)
    print(f"serving {server.model} at {server.url}  (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


if __name__ == "__main__":
    main()
