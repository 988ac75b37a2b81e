"""A ``Policy`` over any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, hosted teachers).

    policy = OpenAIPolicy(["http://gpu0:8000/v1", "http://gpu1:8000/v1"], concurrency=64)
    generations = await policy.generate(messages, tools, SamplingParams(n=4), ctx)

Each request goes to the endpoint with the fewest requests in flight. Connection errors,
timeouts, 429 and 5xx are retried with exponential backoff and jitter (``Retry-After`` honoured);
any other 4xx fails at once with the endpoint and status in the message. A dead endpoint costs at
most ``(max_retries + 1) * timeout`` plus the backoff sleeps, then one ``PolicyHTTPError``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from envtrain.agent.openai_format import choice_logprobs, content_text, message_to_turn, normalize_finish_reason, reparse_content
from envtrain.agent.types import EpisodeContext, Generation, Message, ParsedTurn, SamplingParams

if TYPE_CHECKING:
    import httpx

RETRY_STATUSES = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
COOL_OFF = 1.0  # seconds a failing endpoint goes to the back of the queue, doubling while it keeps failing


class PolicyHTTPError(RuntimeError):
    """A request that failed for good: a non-retryable status, or every retry spent."""

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class _Retryable(Exception):
    """One failed attempt worth another try (after ``delay`` seconds if the server said so)."""

    def __init__(self, reason: str, delay: float | None = None) -> None:
        super().__init__(reason)
        self.delay = delay


@dataclass
class _Session:
    """Everything bound to one event loop: asyncio primitives and httpx pools cannot cross loops."""

    loop: asyncio.AbstractEventLoop
    client: httpx.AsyncClient
    slots: asyncio.Semaphore
    model_lock: asyncio.Lock


def normalize_base_url(url: str) -> str:
    """``http://host:8000`` -> ``http://host:8000/v1``; a URL with a path is kept as given."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return url if parts.path not in ("", "/") else url + "/v1"


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds: either a number or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIPolicy:
    """Chat completions over HTTP, spread over several endpoints.

    ``extra_body`` is merged into every request: server-specific switches such as vLLM's
    ``{"return_token_ids": True}`` (then token ids come back too) or ``chat_template_kwargs``.
    ``family`` names the tool-call format (``envtrain.agent.parsers``) to read calls with when a
    server returns them as text in ``content``; ``None`` recognises the markup by itself.
    """

    def __init__(
        self,
        urls: list[str],
        *,
        model: str | None = None,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout: float = 120,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        extra_body: dict[str, Any] | None = None,
        family: str | None = None,
    ) -> None:
        if not urls:
            raise ValueError("OpenAIPolicy needs at least one endpoint URL")
        if concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise ValueError("concurrency must be >= 1, max_retries >= 0 and timeout > 0")
        self.urls = [normalize_base_url(u) for u in urls]
        self.name = "openai:" + ",".join(self.urls)
        self.model = model
        self.api_key = api_key
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.extra_body = dict(extra_body or {})
        self.family = family
        self.inflight = {u: 0 for u in self.urls}
        self.sent = {u: 0 for u in self.urls}  # requests started per endpoint: the tie-break, and for inspection
        self._cool_until = {u: 0.0 for u in self.urls}  # an endpoint that just failed is tried last until then
        self._failures = {u: 0 for u in self.urls}  # consecutive failed attempts: the cool-off doubles with each
        self._logprobs_ok = True  # cleared the first time a server refuses ``logprobs``
        self._session: _Session | None = None
        self._rng = random.Random()

    # -- the Policy interface -------------------------------------------------------------------

    async def generate(
        self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, ctx: EpisodeContext
    ) -> list[Generation]:
        """``params.n`` turns; asks again for the rest when a server returns fewer choices than ``n``."""
        generations: list[Generation] = []
        for _ in range(params.n):  # bounded: each round returns at least one choice or raises
            missing = params.n - len(generations)
            if missing <= 0:
                break
            generations.extend(await self._complete(messages, tools, params, missing, len(generations)))
        return generations[: params.n]

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.loop.is_closed():
            await session.client.aclose()

    # -- one chat completion --------------------------------------------------------------------

    async def _complete(
        self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, n: int, first_index: int
    ) -> list[Generation]:
        body: dict[str, Any] = {
            "model": await self.model_name(),
            "messages": messages,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
            "n": n,
        }
        if tools:  # OpenAI refuses ``tool_choice`` without ``tools``
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if params.seed is not None:
            body["seed"] = params.seed + first_index  # a follow-up round must not repeat the same samples
        if params.stop:
            body["stop"] = list(params.stop)
        body.update(self.extra_body)
        started = time.perf_counter()
        if self._logprobs_ok:
            try:
                data = await self._request("POST", "/chat/completions", {**body, "logprobs": True})
            except PolicyHTTPError as exc:
                # Some servers (hosted teachers, older stacks) refuse ``logprobs``: ask again without, and remember.
                if exc.status not in (400, 422) or "logprob" not in str(exc).lower():
                    raise
                data = await self._request("POST", "/chat/completions", body)
                self._logprobs_ok = False
        else:
            data = await self._request("POST", "/chat/completions", body)
        seconds = time.perf_counter() - started
        return self._generations(data, seconds)

    def _generations(self, data: dict[str, Any], seconds: float) -> list[Generation]:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise PolicyHTTPError(f"response has no choices: {json.dumps(data)[:300]}", url=self.name)
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        total_completion = int(usage.get("completion_tokens") or 0)
        prompt_ids = data.get("prompt_token_ids")  # vLLM with ``return_token_ids``
        out: list[Generation] = []
        for i, choice in enumerate(choices):
            message = choice.get("message") or {}
            turn: ParsedTurn = reparse_content(message_to_turn(message, choice.get("index", i)), self.family)
            logprobs = choice_logprobs(choice)
            token_ids = choice.get("token_ids")
            if logprobs is not None:
                completion_tokens = len(logprobs)
            elif token_ids is not None:
                completion_tokens = len(token_ids)
            else:  # usage counts all choices together: split it, remainder to the first
                completion_tokens = total_completion // len(choices) + (total_completion % len(choices) if i == 0 else 0)
            out.append(Generation(
                turn=turn,
                text=content_text(message.get("content")),  # HTTP sees the server's parsed message, not raw text
                finish_reason=normalize_finish_reason(choice.get("finish_reason"), bool(turn.tool_calls)),
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                prompt_token_ids=list(prompt_ids) if prompt_ids is not None else None,
                token_ids=list(token_ids) if token_ids is not None else None,
                logprobs=logprobs,
                seconds=seconds,
            ))
        return out

    async def model_name(self) -> str:
        """The model to ask for: the one given, else the first that ``GET /models`` lists (asked once)."""
        if self.model is not None:
            return self.model
        session = self._current_session()
        async with session.model_lock:
            if self.model is None:
                data = await self._request("GET", "/models")
                models = data.get("data") or []
                if not models or "id" not in models[0]:
                    raise PolicyHTTPError(f"GET /models listed no model: {json.dumps(data)[:300]}", url=self.name)
                self.model = str(models[0]["id"])
        return self.model

    # -- transport: endpoint choice, concurrency, retries --------------------------------------

    def _current_session(self) -> _Session:
        import httpx

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.loop is not loop:
            # A policy reused under a new event loop (asyncio.run per batch) gets fresh loop-bound state.
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
            client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), headers=headers, limits=limits)
            self._session = _Session(loop, client, asyncio.Semaphore(self.concurrency), asyncio.Lock())
        return self._session

    def _pick_endpoint(self) -> str:
        """Fewest in flight; a recently failed endpoint last; then the one sent the fewest so far."""
        now = time.monotonic()
        return min(self.urls, key=lambda u: (self._cool_until[u] > now, self.inflight[u], self.sent[u]))

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        session = self._current_session()
        attempts = self.max_retries + 1
        last = ""
        for attempt in range(attempts):
            async with session.slots:
                url = self._pick_endpoint()
                self.inflight[url] += 1
                self.sent[url] += 1
                try:
                    data = await asyncio.wait_for(self._attempt(session.client, method, url + path, body), self.timeout)
                    self._failures[url] = 0
                    return data
                except _Retryable as exc:
                    last, server_delay = f"{url}{path}: {exc}", exc.delay
                except asyncio.TimeoutError:
                    last, server_delay = f"{url}{path}: no answer within {self.timeout:g} s", None
                finally:
                    self.inflight[url] -= 1
            delay = server_delay if server_delay is not None else self.backoff * 2**attempt * self._rng.uniform(0.5, 1.0)
            delay = min(delay, self.max_backoff)
            self._failures[url] += 1
            cool_off = min(self.max_backoff, max(delay, COOL_OFF) * 2 ** (self._failures[url] - 1))
            self._cool_until[url] = time.monotonic() + cool_off
            if attempt + 1 == attempts:
                break
            await asyncio.sleep(delay)  # outside the semaphore: a sleeping request holds no slot
        raise PolicyHTTPError(f"{method} {path} failed after {attempts} attempts; last error: {last}", url=self.name)

    async def _attempt(self, client: httpx.AsyncClient, method: str, url: str, body: dict[str, Any] | None) -> dict[str, Any]:
        import httpx

        try:
            response = await client.request(method, url, json=body)
        except (httpx.TransportError, httpx.TimeoutException) as exc:  # refused, reset, DNS, read timeout
            raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code in RETRY_STATUSES:
            raise _Retryable(f"HTTP {response.status_code}: {response.text[:200]}",
                             retry_after_seconds(response.headers.get("retry-after")))
        if response.status_code >= 400:
            raise PolicyHTTPError(f"{method} {url} answered HTTP {response.status_code}: {_error_message(response)}",
                                  url=url, status=response.status_code)
        try:
            data = response.json()
        except ValueError as exc:
            raise _Retryable(f"HTTP {response.status_code} with a body that is not JSON: {response.text[:200]}") from exc
        if not isinstance(data, dict):
            raise PolicyHTTPError(f"{method} {url} answered with JSON that is not an object", url=url,
                                  status=response.status_code)
        return data


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
        if isinstance(error, str):
            return error[:500]
    except (ValueError, AttributeError):
        pass
    return response.text[:500]
