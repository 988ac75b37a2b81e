"""GRPO rollouts: multi-turn episodes that drive envtrain sessions, with exact token ids, logprobs and masks.

    rollout = EnvRollout(envs, tokenizer, RolloutSettings(max_turns=20, ...))
    GRPOTrainer(..., rollout_func=rollout)

Why ``rollout_func`` and not TRL's ``environment_factory`` (both read in TRL 1.16's GRPOTrainer):
``environment_factory`` exposes an environment's tools as Python methods, their schemas rebuilt from
signatures and docstrings; envtrain tools are JSON-schema specs that differ per environment (enums,
nested objects, required fields would be lost or need generated classes), a call that does not parse
would not reach the environment as the structured error envtrain's agents see, and on the transformers
backend it returns no sampling logprobs. With ``rollout_func`` this module owns the episode: the same
system prompt, tool-call parser and error observations as ``envtrain collect``, and a token record
built by concatenation, never by re-rendering: prompt ids, then per turn the sampled ids (mask 1,
their sampling logprobs) and the template's tokens for the environment's answer (mask 0, logprob 0).
What the trainer scores is exactly what the model conditioned on. TRL treats ``env_mask`` as its
tool mask, so environment tokens carry no loss.

Generation goes through the trainer's own backend: vLLM (colocate or server; TRL syncs the weights
before calling us) or ``transformers`` generate on the unwrapped model. Sessions run in this process,
one per episode, so ranks never share state.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from envtrain.agent.parsers import parse_completion
from envtrain.rollout.episode import unparsed_observations


@dataclass(frozen=True)
class RolloutSettings:
    max_turns: int  # assistant turns per episode
    max_turn_tokens: int  # sampled tokens per assistant turn
    max_completion_tokens: int  # everything after the prompt: sampled and environment tokens (TRL's max_completion_length)
    max_sequence_tokens: int  # prompt + completion must stay below this (the model's or vLLM's context)
    mask_error_turns: bool = False  # True: a turn any of whose calls got an error status (>= 400) carries no loss, as in SFT
    family: str = "hermes"  # tool-call format, see envtrain.agent.parsers


@dataclass
class Episode:
    """One rollout's state; token lists grow turn by turn."""

    env_id: str
    session: Any
    messages: list[dict[str, Any]]
    prompt_ids: list[int]  # (P,)
    completion_ids: list[int] = field(default_factory=list)  # (C,) sampled and environment tokens
    logprobs: list[float] = field(default_factory=list)  # (C,) sampling logprob; 0.0 on environment tokens
    env_mask: list[int] = field(default_factory=list)  # (C,) 1 on sampled tokens that carry loss, 0 elsewhere
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    model_tokens: int = 0
    env_tokens: int = 0
    stop: str = ""  # done | turn_limit | token_limit

    @property
    def live(self) -> bool:
        return not self.stop


class EnvRollout:
    """The ``rollout_func`` GRPOTrainer calls once per generation batch: ``(prompts, trainer) -> dict``."""

    def __init__(self, envs: dict[str, Any], tokenizer: Any, settings: RolloutSettings) -> None:
        from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

        self.envs = envs  # env id -> Environment
        self.runtimes: dict[str, Any] = {}  # compiled on first use, kept for the run
        self.tokenizer = tokenizer
        self.settings = settings
        # Suffixes are rendered by a prefix-preserving template (TRL's training variant when the model's own is not,
        # as TRL itself does for tool loops); prompts by the model's own template, as at inference.
        self.suffix_template = None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)

    def runtime(self, env_id: str) -> Any:
        from envtrain.core.session import Runtime

        if env_id not in self.runtimes:
            if env_id not in self.envs:
                raise KeyError(f"rollout for unknown environment {env_id!r}")
            self.runtimes[env_id] = Runtime(self.envs[env_id])
        return self.runtimes[env_id]

    def start(self, prompt: list[dict[str, Any]]) -> Episode:
        env_id = prompt[0].get("env_id")
        if not env_id:
            raise ValueError("a GRPO prompt must carry its environment id in prompt[0]['env_id'] (see envtrain.train.prompts)")
        runtime = self.runtime(env_id)
        session = runtime.session()
        obs = session.reset()
        messages = [{k: v for k, v in m.items() if v is not None and k != "env_id"} for m in prompt]
        ids = self.tokenizer.apply_chat_template(messages, tools=obs.tools or None, add_generation_prompt=True,
                                                 tokenize=True, return_dict=False)
        return Episode(env_id=env_id, session=session, messages=messages, prompt_ids=list(ids))

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer: Any) -> dict[str, Any]:
        stop_ids = set(trainer.eos_token_ids)  # the generation config's end tokens (Qwen3: <|im_end|>, <|endoftext|>)
        episodes: list[Episode] = []
        try:
            for prompt in prompts:
                episodes.append(self.start(prompt))
            with _TurnGenerator(trainer) as generate:
                for _ in range(self.settings.max_turns):
                    live = [e for e in episodes if e.live]
                    if not _any_live(trainer, bool(live)):
                        break
                    budget = [self._turn_budget(e) for e in live]
                    outputs = generate([e.prompt_ids + e.completion_ids for e in live], max(budget, default=1))
                    for episode, (ids, lps), limit in zip(live, outputs, budget):
                        self.record(episode, ids[:limit], lps[:limit], stop_ids)
            for e in episodes:
                if e.live:
                    e.stop = "turn_limit"
            results = [e.session.verify() for e in episodes]
        finally:
            for e in episodes:
                e.session.close()
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion_ids for e in episodes],
            "logprobs": [e.logprobs for e in episodes],
            "env_mask": [e.env_mask for e in episodes],
            # Extra fields: TRL passes them to the reward function beside the dataset columns.
            "rollout_env_id": [e.env_id for e in episodes],
            "rollout_passed": [r.passed for r in results],
            "rollout_score": [r.score for r in results],
            "rollout_turns": [e.turns for e in episodes],
            "rollout_tool_calls": [e.tool_calls for e in episodes],
            "rollout_tool_errors": [e.tool_errors for e in episodes],
            "rollout_model_tokens": [e.model_tokens for e in episodes],
            "rollout_env_tokens": [e.env_tokens for e in episodes],
            "rollout_stop": [e.stop for e in episodes],
        }

    def _turn_budget(self, e: Episode) -> int:
        s = self.settings
        left = min(s.max_completion_tokens - len(e.completion_ids),
                   s.max_sequence_tokens - len(e.prompt_ids) - len(e.completion_ids))
        return max(1, min(s.max_turn_tokens, left))

    def record(self, e: Episode, ids: list[int], logprobs: list[float], stop_ids: set[int]) -> None:
        """Append one sampled turn, step its tool calls, and append the environment's answer (or stop)."""
        e.turns += 1
        ended = bool(ids) and ids[-1] in stop_ids
        body = ids[:-1] if ended else ids
        turn = parse_completion(self.tokenizer.decode(body, skip_special_tokens=False), self.settings.family)
        e.messages.append(turn.to_message())
        start = len(e.completion_ids)
        e.completion_ids += ids
        e.logprobs += logprobs
        e.env_mask += [1] * len(ids)
        e.model_tokens += len(ids)
        if not ended:  # cut by a token budget: a half-written call is not run, and nothing can follow it
            e.stop = "token_limit"
            return
        if not turn.tool_calls and not turn.errors:
            e.stop = "done"
            return
        answers: list[dict[str, Any]] = []
        statuses: list[int] = []
        for call in turn.tool_calls:
            result = e.session.step({"tool": call.name, "arguments": call.arguments})
            statuses.append(result.status)
            answers.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result.content()})
        statuses += [400] * len(turn.errors)  # calls that did not parse: the model reads why, as in envtrain collect
        answers += unparsed_observations(turn.errors)
        e.tool_calls += len(statuses)
        e.tool_errors += sum(s >= 400 for s in statuses)
        if self.settings.mask_error_turns and any(s >= 400 for s in statuses):  # the rule turn_record applies for SFT
            e.env_mask[start:] = [0] * (len(e.env_mask) - start)
        e.messages += answers
        if e.turns >= self.settings.max_turns:
            e.stop = "turn_limit"  # the calls ran (the verifier sees them); no answer tokens, nothing follows
            return
        suffix = self.suffix_ids(turn.tool_calls, answers)
        room = min(self.settings.max_completion_tokens - len(e.completion_ids),
                   self.settings.max_sequence_tokens - len(e.prompt_ids) - len(e.completion_ids))
        if len(suffix) + 1 > room:  # the answer would leave no room for another sampled token
            e.stop = "token_limit"
            return
        e.completion_ids += suffix
        e.logprobs += [0.0] * len(suffix)
        e.env_mask += [0] * len(suffix)
        e.env_tokens += len(suffix)

    def suffix_ids(self, calls: Any, answers: list[dict[str, Any]]) -> list[int]:
        """The template's tokens between an assistant turn's end token and the next turn's first sampled token.

        Rendered by difference on a stand-in conversation, as TRL's tool loop does: the part after the
        assistant's end token of [user, assistant, *answers, generation prompt]."""
        assistant: dict[str, Any] = {"role": "assistant", "content": ""}
        if calls:
            assistant["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": {}}} for c in calls]
        stand_in = [{"role": "user", "content": "x"}, assistant]
        render = {"tokenize": True, "return_dict": False, "chat_template": self.suffix_template}
        prefix = list(self.tokenizer.apply_chat_template(stand_in, add_generation_prompt=False, **render))
        full = list(self.tokenizer.apply_chat_template(stand_in + answers, add_generation_prompt=True, **render))
        eos = set(_eos_ids(self.tokenizer))
        ends = [i for i, t in enumerate(prefix) if t in eos]
        if ends:  # templates write "<|im_end|>\n": the sampled turn stops at the end token, the newline is ours
            prefix = prefix[: ends[-1] + 1]
        if full[: len(prefix)] != prefix:
            raise ValueError("the chat template does not render the environment's answer as a suffix of the turn")
        return full[len(prefix):]


def _eos_ids(tokenizer: Any) -> list[int]:
    return [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []


def _any_live(trainer: Any, mine: bool) -> bool:
    """True while any rank has a live episode: vLLM generation is a collective call, so ranks turn in step."""
    accelerator = trainer.accelerator
    if accelerator.num_processes == 1:
        return mine
    import torch

    flag = torch.tensor([int(mine)], device=accelerator.device)
    return bool(accelerator.gather(flag).sum().item())


class _TurnGenerator:
    """Context manager yielding ``generate(prompt_ids_batch, max_new_tokens) -> [(ids, logprobs)]``."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.context: Any = nullcontext()

    def __enter__(self) -> Any:
        t = self.trainer
        if t.use_vllm:
            return self._vllm
        from trl.models.utils import unwrap_model_for_generation

        # Gather ZeRO-3 shards once for the whole rollout: generation between turns is then rank-local.
        self.context = unwrap_model_for_generation(
            t.model_wrapped, t.accelerator, gather_deepspeed3_params=True,
            generation_kwargs=t.generation_kwargs, gradient_checkpointing_kwargs=t.args.gradient_checkpointing_kwargs,
        )
        self.model = self.context.__enter__()
        return self._hf

    def __exit__(self, *exc: object) -> None:
        self.context.__exit__(*exc)

    def _vllm(self, prompts: list[list[int]], max_new_tokens: int) -> list[tuple[list[int], list[float]]]:
        gen = self.trainer.vllm_generation
        before = gen.max_completion_length
        gen.max_completion_length = max_new_tokens  # read per call; restored after
        try:
            _, completions, logprobs, _ = gen.generate(prompts=prompts, images=None, num_generations=1)
        finally:
            gen.max_completion_length = before
        return [(list(ids), [lp[0] if lp and lp[0] is not None else float("nan") for lp in lps])
                for ids, lps in zip(completions, logprobs)]

    def _hf(self, prompts: list[list[int]], max_new_tokens: int) -> list[tuple[list[int], list[float]]]:
        import copy

        import torch

        if not prompts:
            return []
        t = self.trainer
        pad = t._tokenizer.pad_token_id
        width = max(len(p) for p in prompts)
        device = t.accelerator.device
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)  # (B, W) left-padded
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)  # (B, W)
        config = copy.deepcopy(t.generation_config)
        config.max_new_tokens = max_new_tokens
        config.output_scores = True
        config.return_dict_in_generate = True
        with torch.no_grad():
            out = self.model.generate(input_ids=input_ids, attention_mask=attention, generation_config=config)
        completion = out.sequences[:, width:]  # (B, T)
        scores = torch.stack(out.scores, dim=1).float()  # (B, T, V) after temperature / top-p / top-k
        logprobs = torch.log_softmax(scores, dim=-1).gather(-1, completion.unsqueeze(-1)).squeeze(-1)  # (B, T)
        eos = set(t.eos_token_ids)
        results = []
        for ids, lps in zip(completion.tolist(), logprobs.tolist()):
            end = next((i + 1 for i, tok in enumerate(ids) if tok in eos), len(ids))
            results.append((ids[:end], lps[:end]))
        return results


__all__ = ["EnvRollout", "Episode", "RolloutSettings"]
