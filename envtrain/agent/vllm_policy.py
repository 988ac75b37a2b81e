"""A Policy on vLLM's offline engine (``vllm.LLM``): batched generation with token ids and logprobs.

    policy = VLLMPolicy("Qwen/Qwen3-8B", tensor_parallel_size=2, max_model_len=32768)
    gens = await policy.generate(messages, tools, SamplingParams(n=8), ctx)

Concurrent ``generate`` calls (one per episode) are gathered into one ``LLM.generate`` batch: while a
batch runs, new requests queue, and the next batch takes them all, so the engine stays full without
a fixed wait. Prompts are rendered with the model's chat template here, exactly as ``HFPolicy`` does,
so the ``prompt_token_ids`` recorded in trajectories are what the model saw. vLLM is imported in the
constructor only: it is a GPU extra (``pip install envtrain[gpu]``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from envtrain.agent.parsers import detect_family, parse_completion
from envtrain.agent.types import EpisodeContext, Generation, Message, ParsedTurn, SamplingParams

MISSING_VLLM = "vLLM is not installed: pip install envtrain[gpu] on a CUDA machine"


@dataclass
class _Pending:
    prompt_ids: list[int]
    params: SamplingParams
    future: asyncio.Future[list[Generation]] = field(repr=False)


class VLLMPolicy:
    """``vllm.LLM`` behind the Policy interface; ``engine_kwargs`` go to ``vllm.LLM`` as they are."""

    def __init__(
        self,
        model: str,
        *,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        family: str | None = None,
        **engine_kwargs: Any,
    ) -> None:
        try:
            import vllm
        except ImportError:
            raise RuntimeError(MISSING_VLLM) from None
        self._vllm = vllm
        self.name = f"vllm:{model}"
        options: dict[str, Any] = {"tensor_parallel_size": tensor_parallel_size, "gpu_memory_utilization": gpu_memory_utilization}
        if max_model_len is not None:
            options["max_model_len"] = max_model_len
        self.llm: Any = vllm.LLM(model=model, **options, **engine_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.family = family or detect_family(self.tokenizer)
        self.max_model_len = max_model_len or _engine_max_len(self.llm)
        self._pending: list[_Pending] = []
        self._drainer: asyncio.Task[None] | None = None

    # -- the Policy interface -------------------------------------------------------------------

    async def generate(
        self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, ctx: EpisodeContext
    ) -> list[Generation]:
        from jinja2 import TemplateError

        from envtrain.agent.hf import prepare_messages

        if self.llm is None:
            raise RuntimeError(f"{self.name} is closed")
        try:
            prompt = self.tokenizer.apply_chat_template(
                prepare_messages(messages, self.family), tools=tools or None, add_generation_prompt=True, tokenize=False
            )
        except TemplateError as exc:  # the conversation is the model's doing: an error turn, not an exception
            turn = ParsedTurn(errors=(f"the chat template could not render the conversation: {exc}",))
            return [Generation(turn=turn, text="", finish_reason="error") for _ in range(params.n)]
        prompt_ids: list[int] = self.tokenizer.encode(prompt, add_special_tokens=False)  # the template holds the specials
        if self.max_model_len is not None and len(prompt_ids) >= self.max_model_len:
            turn = ParsedTurn(errors=(f"the conversation ({len(prompt_ids)} tokens) fills the context of {self.max_model_len}",))
            return [Generation(turn=turn, text="", finish_reason="length", prompt_tokens=len(prompt_ids),
                               prompt_token_ids=prompt_ids) for _ in range(params.n)]
        loop = asyncio.get_running_loop()
        pending = _Pending(prompt_ids, params, loop.create_future())
        self._pending.append(pending)
        if self._drainer is None or self._drainer.done() or self._drainer.get_loop() is not loop:
            self._drainer = loop.create_task(self._drain())
        return await pending.future

    async def aclose(self) -> None:
        if self._drainer is not None and not self._drainer.done():
            await self._drainer
        self.llm = None  # vLLM frees its workers and KV cache when the engine is collected
        import gc

        gc.collect()

    # -- batching -------------------------------------------------------------------------------

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # let callers started in the same gather() enqueue before the first batch
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                results = await asyncio.to_thread(self._run_batch, batch)
            except Exception as exc:  # an engine failure fails this batch's requests, not the drainer
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(exc)
                continue
            for p, gens in zip(batch, results):
                if not p.future.done():
                    p.future.set_result(gens)

    def _run_batch(self, batch: list[_Pending]) -> list[list[Generation]]:
        import time

        prompts = [{"prompt_token_ids": p.prompt_ids} for p in batch]  # vllm.inputs.TokensPrompt
        sampling = [self._sampling_params(p) for p in batch]
        started = time.perf_counter()
        outputs = self.llm.generate(prompts, sampling, use_tqdm=False)  # one RequestOutput per prompt, in order
        seconds = time.perf_counter() - started
        return [[self._generation(p, completion, seconds) for completion in out.outputs] for p, out in zip(batch, outputs)]

    def _sampling_params(self, pending: _Pending) -> Any:
        params = pending.params
        max_tokens = params.max_tokens
        if self.max_model_len is not None:  # never ask past the context: vLLM would refuse the whole batch
            max_tokens = max(1, min(max_tokens, self.max_model_len - len(pending.prompt_ids)))
        return self._vllm.SamplingParams(
            n=params.n,
            temperature=params.temperature,
            top_p=params.top_p,
            max_tokens=max_tokens,
            seed=params.seed,
            stop=list(params.stop) or None,
            logprobs=0,  # 0: only the sampled token's logprob
            skip_special_tokens=False,  # control markers such as [TOOL_CALLS] are the parser's input
        )

    def _generation(self, pending: _Pending, completion: Any, seconds: float) -> Generation:
        """A ``vllm.CompletionOutput`` as a ``Generation``; text decoded from the ids as ``HFPolicy`` does."""
        token_ids = list(completion.token_ids)
        logprobs = None
        if completion.logprobs is not None:  # list[dict[token_id, Logprob]] (or FlatLogprobs, indexed alike)
            logprobs = [float(step[tid].logprob) for tid, step in zip(token_ids, completion.logprobs)]
        stopped_on_string = isinstance(completion.stop_reason, str)
        if completion.finish_reason == "stop" and not stopped_on_string and token_ids:
            body = token_ids[:-1]  # the end token (EOS or a stop token id) is trained on, not shown
        else:
            body = token_ids
        text = self.tokenizer.decode(body, skip_special_tokens=False)
        if stopped_on_string:
            text = completion.text  # vLLM already cut before the stop string, as OpenAI does
        turn = parse_completion(text, self.family)
        if completion.finish_reason == "length":
            reason = "length"
        else:
            reason = "tool_calls" if turn.tool_calls else "stop"
        return Generation(
            turn=turn,
            text=text,
            finish_reason=reason,
            prompt_tokens=len(pending.prompt_ids),
            completion_tokens=len(token_ids),
            prompt_token_ids=list(pending.prompt_ids),
            token_ids=token_ids,
            logprobs=logprobs,
            seconds=seconds,  # the whole batch's wall time
        )


def _engine_max_len(llm: Any) -> int | None:
    """The engine's context length; the attribute path has moved between vLLM versions, so look, don't assume."""
    for path in (("model_config",), ("llm_engine", "model_config")):
        obj = llm
        for name in path:
            obj = getattr(obj, name, None)
        value = getattr(obj, "max_model_len", None)
        if isinstance(value, int):
            return value
    return None
