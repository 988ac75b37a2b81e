"""A Policy on plain ``transformers`` generate: slow, but exact token ids and logprobs on any device.

    policy = HFPolicy(build_tiny_model(tmp))              # or any local checkpoint
    gens = await policy.generate(messages, tools, SamplingParams(n=2, max_tokens=64), ctx)

Generation runs in a worker thread (the event loop stays free) and one lock serialises use of the
model, so concurrent episodes may share a policy. torch and transformers load in the constructor.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

from envtrain.agent.parsers import detect_family, parse_completion
from envtrain.agent.types import EpisodeContext, Generation, Message, ParsedTurn, SamplingParams


def prepare_messages(messages: list[Message], family: str) -> list[Message]:
    """OpenAI messages as chat templates expect them: tool-call arguments as objects.

    OpenAI carries arguments as JSON strings; most templates (Llama's ``tojson``, Qwen's either way)
    want the object, but DeepSeek-V3's original template concatenates the string, so it keeps strings.
    """
    if family == "deepseek":
        return messages
    prepared: list[Message] = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            message = {**message, "tool_calls": [_decoded_call(c) for c in calls]}
        prepared.append(message)
    return prepared


def _decoded_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    try:
        args = json.loads(function["arguments"])
    except json.JSONDecodeError:
        return call  # the model's own malformed arguments: render them as written
    if not isinstance(args, dict):
        return call
    return {**call, "function": {**function, "arguments": args}}


class HFPolicy:
    """``transformers`` generate behind the Policy interface."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        family: str | None = None,
        device: str = "cpu",
        dtype: str = "auto",
        name: str | None = None,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = name or f"hf:{model_path}"
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype).to(self.device).eval()
        self.family = family or detect_family(self.tokenizer)
        self.eos_ids = self._eos_ids()
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_ids[0]
        self._lock = threading.Lock()  # a thread lock: generation runs in worker threads, possibly from several loops

    def _eos_ids(self) -> list[int]:
        ids = self.model.generation_config.eos_token_id
        ids = [] if ids is None else [ids] if isinstance(ids, int) else list(ids)
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in ids:
            ids.append(self.tokenizer.eos_token_id)
        if not ids:
            raise ValueError(f"{self.name}: neither the generation config nor the tokenizer names an end-of-sequence token")
        return ids

    def render(self, messages: list[Message], tools: list[dict[str, Any]]) -> str:
        """The prompt text, ending in the assistant generation header."""
        return self.tokenizer.apply_chat_template(
            prepare_messages(messages, self.family), tools=tools or None, add_generation_prompt=True, tokenize=False
        )

    async def generate(
        self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams, ctx: EpisodeContext
    ) -> list[Generation]:
        return await asyncio.to_thread(self._generate_locked, messages, tools, params)

    def _generate_locked(self, messages: list[Message], tools: list[dict[str, Any]], params: SamplingParams) -> list[Generation]:
        from jinja2 import TemplateError

        # The tokenizer is under the lock too: a Rust tokenizer used from two threads can fail "Already borrowed".
        with self._lock:
            if self.model is None:
                raise RuntimeError(f"{self.name} is closed")
            try:
                prompt = self.render(messages, tools)
            except TemplateError as exc:  # e.g. Llama 3.1 refusing a past turn with two calls: the model's doing
                turn = ParsedTurn(errors=(f"the chat template could not render the conversation: {exc}",))
                return [Generation(turn=turn, text="", finish_reason="error") for _ in range(params.n)]
            prompt_ids: list[int] = self.tokenizer(prompt, add_special_tokens=False).input_ids
            start = time.perf_counter()
            sequences, logprobs = self._sample(prompt_ids, params)
            seconds = time.perf_counter() - start
            return [self._finish(prompt_ids, seq, lps, params, seconds) for seq, lps in zip(sequences, logprobs)]

    def _sample(self, prompt_ids: list[int], params: SamplingParams) -> tuple[list[list[int]], list[list[float]]]:
        """``n`` completions (padded past their end) and each sampled token's logprob under the processed scores."""
        import torch

        # n identical rows rather than num_return_sequences: greedy decoding refuses the latter.
        input_ids = torch.tensor([prompt_ids] * params.n, dtype=torch.long, device=self.device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_tokens,
            "eos_token_id": self.eos_ids,
            "pad_token_id": self.pad_id,
            "output_scores": True,
            "return_dict_in_generate": True,
        }
        if params.temperature > 0:
            kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p, top_k=0)  # 0: off, as in vLLM (transformers defaults to 50)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if params.stop:
            kwargs.update(stop_strings=list(params.stop), tokenizer=self.tokenizer)
        devices = [] if self.device.type == "cpu" else [self.device.index or 0]
        with torch.random.fork_rng(devices=devices, device_type=self.device.type), torch.inference_mode():
            if params.seed is not None:  # seeded inside a forked RNG: reproducible, and the caller's RNG is untouched
                torch.manual_seed(params.seed)
            out = self.model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
            completion = out.sequences[:, len(prompt_ids) :]  # (n, T)
            scores = torch.stack(out.scores, dim=1).float()  # (n, T, V) after temperature / top-p
            logprobs = torch.log_softmax(scores, dim=-1).gather(-1, completion.unsqueeze(-1)).squeeze(-1)  # (n, T)
        return completion.tolist(), logprobs.tolist()

    def _finish(self, prompt_ids: list[int], seq: list[int], lps: list[float], params: SamplingParams, seconds: float) -> Generation:
        cut, ended = self._length(seq, params)
        token_ids, logprobs = seq[:cut], lps[:cut]
        body = token_ids[:-1] if ended == "eos" else token_ids  # the end token is trained on, not shown
        text = self.tokenizer.decode(body, skip_special_tokens=False)  # keep control markers such as [TOOL_CALLS]
        if ended == "stop":
            text = _cut_at_stop(text, params.stop)
        turn = parse_completion(text, self.family)
        if ended is None and cut >= params.max_tokens:
            reason = "length"
        else:
            reason = "tool_calls" if turn.tool_calls else "stop"
        return Generation(
            turn=turn,
            text=text,
            finish_reason=reason,
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(token_ids),
            prompt_token_ids=list(prompt_ids),
            token_ids=token_ids,
            logprobs=logprobs,
            seconds=seconds,  # the whole batch's wall time: the n samples were generated together
        )

    def _length(self, seq: list[int], params: SamplingParams) -> tuple[int, str | None]:
        """How many tokens this row really sampled, and why it ended ("eos", "stop" or None)."""
        eos = set(self.eos_ids)
        end = next((i + 1 for i, t in enumerate(seq) if t in eos), None)
        limit = end if end is not None else len(seq)
        if params.stop:
            # Rows that stopped on a string are padded after it: find the shortest prefix holding one.
            def has_stop(k: int) -> bool:
                return any(s in self.tokenizer.decode(seq[:k], skip_special_tokens=False) for s in params.stop)

            if has_stop(limit):
                lo, hi = 1, limit
                while lo < hi:
                    mid = (lo + hi) // 2
                    lo, hi = (lo, mid) if has_stop(mid) else (mid + 1, hi)
                if end is None or lo < end:
                    return lo, "stop"
        return (end, "eos") if end is not None else (len(seq), None)

    async def aclose(self) -> None:
        with self._lock:
            self.model = None
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass


def _cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    """OpenAI semantics: the text ends before the first stop string (the tokens keep it)."""
    hits = [i for i in (text.find(s) for s in stop) if i >= 0]
    return text[: min(hits)] if hits else text


__all__ = ["HFPolicy", "prepare_messages"]
