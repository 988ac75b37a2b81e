"""Typed envtrain configs into the keyword arguments of TRL's SFTConfig / GRPOConfig (HF TrainingArguments).

One place maps precision, the optimizer, the schedule, batching, checkpoints and DeepSpeed, so SFT
and GRPO read the same settings the same way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from envtrain.train.config import ConfigError, OptimConfig, RunConfig, deepspeed_config, world_size


def trainer_kwargs(cfg: RunConfig, optim: OptimConfig) -> dict[str, Any]:
    import torch

    if cfg.precision != "fp32" and not torch.cuda.is_available():
        raise ConfigError(f"precision {cfg.precision} needs a GPU here; set precision=fp32 for a CPU run")
    ds = deepspeed_config(cfg.deepspeed)
    if ds is not None and os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true":
        raise ConfigError("the accelerate config already enables DeepSpeed; run with deepspeed=null (one DeepSpeed config, chosen once)")
    return {
        "output_dir": str(cfg.output_dir),
        "num_train_epochs": cfg.epochs,
        "max_steps": cfg.max_steps,
        "per_device_train_batch_size": cfg.per_device_batch_size,
        "gradient_accumulation_steps": cfg.accumulation_steps(world_size()),
        "learning_rate": optim.lr,
        "optim": "adamw_torch",  # decoupled AdamW; under a DeepSpeed config with an optimizer block, DeepSpeed's own
        "adam_beta1": optim.betas[0],
        "adam_beta2": optim.betas[1],
        "adam_epsilon": optim.eps,
        "weight_decay": optim.weight_decay,
        "max_grad_norm": optim.max_grad_norm,
        "lr_scheduler_type": optim.scheduler,
        "warmup_steps": optim.warmup_ratio,  # transformers 5: a float below 1 is a ratio of the update steps
        "bf16": cfg.precision == "bf16",
        "fp16": cfg.precision == "fp16",
        **_checkpointing(cfg.gradient_checkpointing),
        "seed": cfg.seed,
        "data_seed": cfg.data_seed,
        "logging_steps": cfg.logging_steps,
        "report_to": list(cfg.report_to) or "none",
        "save_strategy": cfg.checkpoint.every,
        "save_steps": cfg.checkpoint.save_steps,
        "save_total_limit": cfg.checkpoint.save_total_limit,
        "deepspeed": ds,
        "use_cpu": not torch.cuda.is_available(),
        "disable_tqdm": True,  # the progress callback prints one line per logging step instead
        "dataloader_num_workers": 0,
    }


def _checkpointing(enabled: bool) -> dict[str, Any]:
    """Activation checkpointing, non-reentrant (RES App. B), under the name this transformers uses: 5.x renamed
    ``gradient_checkpointing*`` to ``activation_checkpointing*`` and mirrors the new value into the old names,
    which TRL reads."""
    import dataclasses

    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    prefix = "activation" if "activation_checkpointing" in names else "gradient"
    return {f"{prefix}_checkpointing": enabled, f"{prefix}_checkpointing_kwargs": {"use_reentrant": False}}


def resume_point(cfg: RunConfig) -> str | None:
    """The checkpoint to resume from: a path as given, the newest one for ``resume: true``, else None."""
    resume = cfg.checkpoint.resume
    if resume is False:
        return None
    if isinstance(resume, str):
        if not Path(resume).is_dir():
            raise ConfigError(f"checkpoint.resume {resume!r} is not a checkpoint folder")
        return resume
    from transformers.trainer_utils import get_last_checkpoint

    if not Path(cfg.output_dir).is_dir():
        return None
    return get_last_checkpoint(str(cfg.output_dir))


def load_model(path: str, cfg: RunConfig) -> Any:
    """The model in fp32 master weights (mixed precision casts compute); created after the TRL config so that
    under ZeRO-3 transformers loads it already partitioned (HfDeepSpeedConfig is live by then)."""
    import torch
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": torch.float32}
    if cfg.attn_implementation:
        kwargs["attn_implementation"] = cfg.attn_implementation
    return AutoModelForCausalLM.from_pretrained(path, **kwargs)


def load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


__all__ = ["load_model", "load_tokenizer", "resume_point", "trainer_kwargs"]
