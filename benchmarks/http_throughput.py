"""Chat-completions throughput over HTTP at concurrency 1, 8 and 32, as ratios to concurrency 1 in the same run.

    python benchmarks/http_throughput.py            # about half a minute on 2 CPU cores
    python benchmarks/http_throughput.py --quick    # smaller, for CI smoke
    python benchmarks/http_throughput.py --url http://gpu0:8000/v1   # a real server instead (vLLM, SGLang)

Two servers, both the project's own (``envtrain.agent.server``), spoken to with ``OpenAIPolicy``:

  tiny-hf     HFPolicy on the tiny Qwen3 model: real generation, which HFPolicy runs one request
              at a time, so the ratio measures what concurrency buys when the model is the bottleneck
              (about 1 on CPU; vLLM behind the same client batches and scales).
  transport   a policy that answers after a fixed 20 ms: no compute, so the ratio measures the
              client and server themselves (ideal: the concurrency, until threads or the GIL bind).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envtrain.agent.openai_http import OpenAIPolicy  # noqa: E402
from envtrain.agent.server import serve  # noqa: E402
from envtrain.agent.types import EpisodeContext, Generation, Message, ParsedTurn, SamplingParams  # noqa: E402

CONCURRENCY = (1, 8, 32)
MESSAGES = [{"role": "system", "content": "You are a careful clerk."}, {"role": "user", "content": "Pay invoice 10 in full."}]
TOOLS = [{"type": "function", "function": {"name": "pay_invoice", "description": "pay an invoice", "parameters": {
    "type": "object", "properties": {"invoice_id": {"type": "integer"}, "amount": {"type": "number"}}, "required": ["invoice_id"]}}}]


class FixedLatencyPolicy:
    """Answers every request after ``delay`` seconds with ``tokens`` made-up tokens: no compute at all."""

    name = "fixed-latency"

    def __init__(self, delay: float, tokens: int) -> None:
        self.delay, self.tokens = delay, tokens

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams,
                       ctx: EpisodeContext) -> list[Generation]:
        await asyncio.sleep(self.delay)
        return [Generation(turn=ParsedTurn(content="ok"), text="ok", finish_reason="stop", prompt_tokens=50,
                           completion_tokens=self.tokens) for _ in range(params.n)]

    async def aclose(self) -> None:
        return None


async def measure(url: str, concurrency: int, requests: int, params: SamplingParams) -> tuple[float, float]:
    """(requests/s, completion tokens/s) for ``requests`` requests kept ``concurrency`` deep."""
    policy = OpenAIPolicy([url], concurrency=concurrency, timeout=600)
    ctx = EpisodeContext(env=None)
    await policy.generate(MESSAGES, TOOLS, params, ctx)  # warm-up: model name lookup, connection, first-call costs
    started = time.perf_counter()
    batches = await asyncio.gather(*[policy.generate(MESSAGES, TOOLS, params, ctx) for _ in range(requests)])
    seconds = time.perf_counter() - started
    await policy.aclose()
    tokens = sum(g.completion_tokens for batch in batches for g in batch)
    return requests / seconds, tokens / seconds


def run_rows(label: str, url: str, requests: int, params: SamplingParams) -> list[tuple[str, int, float, float, float]]:
    rows = []
    base = None
    for c in CONCURRENCY:
        rps, tps = asyncio.run(measure(url, c, max(requests, c), params))
        base = base or rps
        rows.append((label, c, rps, tps, rps / base))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests, for a smoke run")
    parser.add_argument("--url", help="measure this OpenAI-compatible server instead of the local ones")
    parser.add_argument("--max-tokens", type=int, default=16)
    args = parser.parse_args()
    requests = 16 if args.quick else 96
    params = SamplingParams(temperature=1.0, max_tokens=args.max_tokens)

    rows: list[tuple[str, int, float, float, float]] = []
    if args.url:
        rows += run_rows("remote", args.url, requests, params)
    else:
        from envtrain.agent.hf import HFPolicy
        from envtrain.agent.tiny import build_tiny_model

        with tempfile.TemporaryDirectory() as tmp:
            hf = HFPolicy(build_tiny_model(Path(tmp) / "tiny"))
            with serve(hf, model_name="tiny-qwen3") as server:
                rows += run_rows("tiny-hf", server.url, requests, params)
        with serve(FixedLatencyPolicy(0.02, args.max_tokens), model_name="fixed") as server:
            rows += run_rows("transport", server.url, requests * 2, params)

    print(f"{'server':<10} {'concurrency':>11} {'requests/s':>11} {'tokens/s':>10} {'vs c=1':>7}")
    for label, c, rps, tps, ratio in rows:
        print(f"{label:<10} {c:>11} {rps:>11.1f} {tps:>10.0f} {ratio:>6.2f}x")


if __name__ == "__main__":
    main()
