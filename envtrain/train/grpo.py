"""GRPO with the environment's verifier as the reward, built on TRL's GRPOTrainer.

    cfg = load_config(GRPORunConfig, "configs/legoenv/grpo.yaml", overrides)
    summary = run_grpo(cfg, printer=print)

Rollouts are multi-turn episodes in envtrain sessions (``envtrain.train.episodes``). The reward is
the verifier and nothing else (LegoEnv App. E: no reward model, no judge, no shaping): 1.0 when every
assertion holds and 0.0 otherwise (``reward: pass``), or the native score, the share of assertions
that hold (``reward: score``). Per step the log holds TRL's reward mean and std plus pass rate,
native score, turns, tool calls, tool errors and tokens of the episodes.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from envtrain.train.config import ConfigError, OptimConfig, RunConfig, Strict, resolve_model
from envtrain.train.logs import Printer, make_callback, quiet, read_metrics
from envtrain.train.prompts import PromptSetConfig, PromptSetReport

LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"]


class VLLMConfig(Strict):
    """vLLM generation on GPU, passed through to TRL (``use_vllm`` and the ``vllm_*`` fields of GRPOConfig)."""

    mode: Literal["off", "colocate", "server"] = "off"  # off: transformers generate; colocate: vLLM in each training process; server: launch/vllm_server.sh
    server_base_url: str | None = None  # server mode: e.g. http://node7:8000 (else host and port)
    server_host: str = "0.0.0.0"  # server mode
    server_port: int = Field(default=8000, ge=1, le=65535)  # server mode
    server_timeout: float = Field(default=240.0, gt=0)  # server mode: seconds to wait for the server to come up
    group_port: int = Field(default=51216, ge=1, le=65535)  # server mode: the weight-update communicator's port
    gpu_memory_utilization: float = Field(default=0.3, gt=0, le=1)  # colocate mode: GPU share vLLM may take
    tensor_parallel_size: int = Field(default=1, ge=1)  # colocate mode (server mode sets it on the server)
    max_model_length: int | None = Field(default=None, ge=1)  # vLLM context; at least prompt + max_completion_tokens
    enable_sleep_mode: bool = False  # colocate mode: offload vLLM weights and cache during the optimizer step
    importance_sampling_correction: bool = True  # correct the vLLM/trainer logprob mismatch (TRL's vllm_importance_sampling_*)
    importance_sampling_mode: Literal["token_truncate", "token_mask", "sequence_truncate", "sequence_mask"] = "sequence_mask"
    importance_sampling_clip_max: float | None = 3.0


class GRPORunConfig(RunConfig):
    """A GRPO run. LegoEnv App. E and EnvCraft Table 17 settings live in configs/legoenv/ and configs/envcraft/."""

    prompts: PromptSetConfig  # which environments, mixed by teacher band plus exploration set
    reward: Literal["pass", "score"] = "pass"  # the verifier: binary pass (default) or native score
    group_size: int = Field(default=8, ge=2)  # episodes per prompt (TRL num_generations); divides global_batch_size
    temperature: float = Field(default=1.0, gt=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    top_k: int = Field(default=0, ge=0)  # 0: off
    loss_type: LossType = "dapo"  # TRL's loss aggregation (grpo normalises per sequence; dapo per token over the batch)
    importance_sampling_level: Literal["token", "sequence"] = "token"  # sequence: GSPO's sequence-level ratio
    beta: float = Field(default=0.0, ge=0)  # KL coefficient against the initial model; 0 loads no reference model
    epsilon: float = Field(default=0.2, gt=0)  # clip range
    epsilon_high: float | None = Field(default=None, gt=0)  # upper clip (DAPO clip-higher); null uses epsilon
    num_iterations: int = Field(default=1, ge=1)  # optimisation passes per generated batch (mu)
    scale_rewards: Literal["group", "batch", "none"] = "group"  # advantage scaling (none: Dr. GRPO)
    mask_truncated_completions: bool = False  # episodes cut by a token budget carry no loss (DAPO)
    max_turns: int = Field(default=20, ge=1)  # assistant turns per episode
    max_turn_tokens: int = Field(default=1024, ge=1)  # sampled tokens per turn
    max_completion_tokens: int = Field(default=8192, ge=2)  # per episode after the prompt, environment answers included
    mask_error_turns: bool = False  # true: a turn any of whose calls got an error (status >= 400) carries no loss, as in SFT
    steps_per_generation: int | None = Field(default=None, ge=1)  # update steps per generated batch; null: accumulation steps
    vllm: VLLMConfig = VLLMConfig()
    optim: OptimConfig

    @model_validator(mode="after")
    def _groups_fit(self) -> GRPORunConfig:
        if self.global_batch_size % self.group_size:
            raise ValueError(f"global_batch_size {self.global_batch_size} must be a multiple of group_size {self.group_size}")
        if self.max_turn_tokens > self.max_completion_tokens:
            raise ValueError("max_turn_tokens cannot exceed max_completion_tokens")
        if self.vllm.mode == "off" and self.vllm != VLLMConfig():
            raise ValueError("vllm settings are given but vllm.mode is off")
        return self


class GRPOSummary(BaseModel):
    output_dir: str
    steps: int
    prompts: PromptSetReport
    reward_first: float | None  # mean reward of the first logged step
    reward_last: float | None
    reward_mean: float | None  # over all logged steps
    pass_rate_mean: float | None
    seconds: float
    seconds_per_step: float


def verifier_reward(mode: str) -> Callable[..., list[float]]:
    """The reward function TRL calls: the verdicts the rollout recorded, checked against the row's environment."""

    def reward(prompts: list[Any], completions: list[Any], *, env_id: list[str], rollout_env_id: list[str],
               rollout_passed: list[bool], rollout_score: list[float], log_metric: Callable[[str, float], None],
               **columns: Any) -> list[float]:
        if list(env_id) != list(rollout_env_id):
            raise RuntimeError("a rollout ran in a different environment from its dataset row")
        _log_episodes(log_metric, rollout_passed, rollout_score, columns)
        if mode == "pass":
            return [1.0 if p else 0.0 for p in rollout_passed]
        return [float(s) for s in rollout_score]

    reward.__name__ = f"verifier_{mode}"  # TRL logs rewards/<name>/mean
    return reward


def _log_episodes(log: Callable[[str, float], None], passed: list[bool], score: list[float], columns: dict[str, Any]) -> None:
    def mean(values: list[Any]) -> float:
        return float(statistics.fmean(values)) if values else 0.0

    log("env/pass_rate", mean([float(p) for p in passed]))
    log("env/score", mean(score))
    for key in ("turns", "tool_calls", "tool_errors", "model_tokens", "env_tokens"):
        log(f"env/{key}", mean(columns.get(f"rollout_{key}", [])))
    stops = columns.get("rollout_stop", [])
    for reason in ("done", "turn_limit", "token_limit"):
        log(f"env/stop_{reason}", mean([float(s == reason) for s in stops]))
    groups = columns.get("group", [])
    for name in sorted(set(groups)):
        log(f"env/pass_rate_{name}", mean([float(p) for p, g in zip(passed, groups) if g == name]))


def trl_config(cfg: GRPORunConfig) -> Any:
    from trl import GRPOConfig

    from envtrain.train.hfargs import trainer_kwargs

    v = cfg.vllm
    vllm = {} if v.mode == "off" else {
        "use_vllm": True, "vllm_mode": v.mode, "vllm_server_base_url": v.server_base_url, "vllm_server_host": v.server_host,
        "vllm_server_port": v.server_port, "vllm_server_timeout": v.server_timeout, "vllm_group_port": v.group_port,
        "vllm_gpu_memory_utilization": v.gpu_memory_utilization, "vllm_tensor_parallel_size": v.tensor_parallel_size,
        "vllm_max_model_length": v.max_model_length, "vllm_enable_sleep_mode": v.enable_sleep_mode,
        "vllm_importance_sampling_correction": v.importance_sampling_correction,
        "vllm_importance_sampling_mode": v.importance_sampling_mode,
        "vllm_importance_sampling_clip_max": v.importance_sampling_clip_max,
    }
    return GRPOConfig(
        **trainer_kwargs(cfg, cfg.optim),
        num_generations=cfg.group_size,
        max_completion_length=cfg.max_completion_tokens,
        temperature=cfg.temperature, top_p=cfg.top_p, top_k=cfg.top_k,
        loss_type=cfg.loss_type, importance_sampling_level=cfg.importance_sampling_level,
        beta=cfg.beta, epsilon=cfg.epsilon, epsilon_high=cfg.epsilon_high, num_iterations=cfg.num_iterations,
        scale_rewards=cfg.scale_rewards, mask_truncated_completions=cfg.mask_truncated_completions,
        steps_per_generation=cfg.steps_per_generation,
        shuffle_dataset=True, log_completions=False,
        **vllm,
    )


def build_trainer(cfg: GRPORunConfig, printer: Printer) -> tuple[Any, PromptSetReport]:
    from trl import GRPOTrainer

    from envtrain.agent.parsers import detect_family
    from envtrain.train.episodes import EnvRollout, RolloutSettings
    from envtrain.train.hfargs import load_model, load_tokenizer
    from envtrain.train.prompts import build_prompt_set

    if cfg.loss_type == "luspo" and cfg.importance_sampling_level != "sequence":
        raise ConfigError("loss_type luspo needs importance_sampling_level: sequence")
    args = trl_config(cfg)  # before the model: under ZeRO-3 it makes from_pretrained load partitioned
    model_path = resolve_model(cfg.model)
    tokenizer = load_tokenizer(model_path)
    tokenizer.padding_side = "left"
    data, envs, report = build_prompt_set(cfg.prompts)
    printer(f"grpo prompts: {report.environments} environments, {report.band} in the band, {report.exploration} exploration, "
            f"{report.dropped_easy} too easy, {report.dropped_hard} below the band, {report.unrated} unrated, "
            f"{len(report.failed)} failed to load")
    model = load_model(model_path, cfg)
    context = cfg.vllm.max_model_length or int(getattr(model.config, "max_position_embeddings", 1 << 30))
    settings = RolloutSettings(
        max_turns=cfg.max_turns, max_turn_tokens=cfg.max_turn_tokens, max_completion_tokens=cfg.max_completion_tokens,
        max_sequence_tokens=context, mask_error_turns=cfg.mask_error_turns, family=detect_family(tokenizer),
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*rollout_func.*experimental")  # chosen on purpose; see episodes.py
        trainer = GRPOTrainer(
            model=model, reward_funcs=[verifier_reward(cfg.reward)], args=args, train_dataset=data,
            processing_class=tokenizer, rollout_func=EnvRollout(envs, tokenizer, settings),
            callbacks=[make_callback(cfg.output_dir, printer, "grpo")],
        )
    quiet(trainer)
    return trainer, report


def run_grpo(cfg: GRPORunConfig, printer: Printer = print) -> GRPOSummary:
    from pathlib import Path

    from envtrain.train.hfargs import resume_point

    resume = resume_point(cfg)
    if resume is None:
        (Path(cfg.output_dir) / "metrics.jsonl").unlink(missing_ok=True)
    else:
        printer(f"grpo: resuming from {resume}")
    trainer, report = build_trainer(cfg, printer)
    start = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - start
    trainer.save_model(str(cfg.output_dir))
    rows = [r for r in read_metrics(cfg.output_dir) if r.get("reward") is not None]
    rewards = [r["reward"] for r in rows]
    passes = [r["env/pass_rate"] for r in rows if r.get("env/pass_rate") is not None]
    return GRPOSummary(
        output_dir=str(cfg.output_dir), steps=result.global_step, prompts=report,
        reward_first=rewards[0] if rewards else None, reward_last=rewards[-1] if rewards else None,
        reward_mean=statistics.fmean(rewards) if rewards else None,
        pass_rate_mean=statistics.fmean(passes) if passes else None,
        seconds=seconds, seconds_per_step=seconds / max(1, result.global_step),
    )


__all__ = ["GRPORunConfig", "GRPOSummary", "VLLMConfig", "build_trainer", "run_grpo", "trl_config", "verifier_reward"]
