"""Typed pieces shared by the SFT and GRPO configs, and loading a YAML config with ``key=value`` overrides.

    cfg = load_config(SFTRunConfig, "configs/res/sft_qwen3.5_4b.yaml", ["optim.lr=1e-5", "max_steps=10"])

A config is one pydantic model (unknown keys are an error, every field documented beside it);
a YAML file loads into it and each override sets one dotted key, its value read as YAML. Every
failure is a ``ConfigError`` whose message is one sentence naming the file and the key.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Precision = Literal["bf16", "fp16", "fp32"]
M = TypeVar("M", bound=BaseModel)

# Where named DeepSpeed / accelerate configs live: ./configs first (a copied recipe), then the checkout's own.
_REPO_CONFIGS = Path(__file__).resolve().parents[2] / "configs"


class ConfigError(ValueError):
    """A config that cannot run; the message is one sentence for the user."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OptimConfig(Strict):
    """AdamW and its learning-rate schedule (RES Table A3, LegoEnv App. E, EnvCraft Table 17 all use AdamW)."""

    lr: float = Field(gt=0)  # peak learning rate
    betas: tuple[float, float] = (0.9, 0.999)  # AdamW beta1, beta2
    eps: float = Field(default=1e-8, gt=0)  # AdamW epsilon
    weight_decay: float = Field(default=0.0, ge=0)  # decoupled weight decay (biases and norms included, as HF's AdamW does)
    max_grad_norm: float = Field(default=1.0, ge=0)  # global gradient clip; 0 turns it off
    scheduler: Literal["cosine", "linear", "constant", "constant_with_warmup"] = "cosine"
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1)  # share of the update steps spent warming up linearly from 0

    @model_validator(mode="after")
    def _betas_in_range(self) -> OptimConfig:
        if not all(0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"betas must lie in [0, 1), got {list(self.betas)}")
        if self.scheduler == "constant" and self.warmup_ratio:
            raise ValueError("scheduler 'constant' has no warmup; use 'constant_with_warmup' or set warmup_ratio to 0")
        return self


class CheckpointConfig(Strict):
    """Checkpoints hold the model, the optimizer and scheduler states, RNG states and the data position."""

    every: Literal["steps", "epoch"] = "steps"  # save every save_steps update steps, or at each epoch's end (LegoEnv)
    save_steps: int = Field(default=500, ge=1)  # with every: steps
    save_total_limit: int | None = Field(default=2, ge=1)  # keep the newest N checkpoints; null keeps all
    resume: bool | str = False  # true: resume from the newest checkpoint in output_dir; a path: from that checkpoint


class RunConfig(Strict):
    """Fields every training run has."""

    model: str  # a local checkpoint, a Hub id, or tiny:PATH (build the tiny local Qwen3 there if missing; CPU tests)
    output_dir: Path  # checkpoints (checkpoint-N/), metrics.jsonl, and the final model in HF format
    precision: Precision = "bf16"  # mixed precision: fp32 master weights, bf16/fp16 compute; fp32 for CPU runs
    gradient_checkpointing: bool = False  # recompute activations in backward (non-reentrant)
    attn_implementation: str | None = None  # e.g. sdpa, flash_attention_2; null lets transformers choose
    seed: int = 42  # training seed (initialisation of new heads, dropout, sampling)
    data_seed: int | None = None  # data order seed; null uses seed
    epochs: float = Field(default=1.0, gt=0)  # passes over the data
    max_steps: int = -1  # stop after this many update steps; -1 runs the epochs
    per_device_batch_size: int = Field(default=1, ge=1)  # sequences per device per micro-step
    global_batch_size: int = Field(default=1, ge=1)  # sequences per update, all ranks; accumulation = global / (per_device x ranks)
    deepspeed: str | None = None  # zero3 | zero3_offload | zero2 (configs/deepspeed/NAME.json), a JSON path, or null
    logging_steps: int = Field(default=1, ge=1)  # log every N update steps
    report_to: list[str] = Field(default_factory=list)  # extra trackers (wandb, tensorboard); metrics.jsonl is always written
    checkpoint: CheckpointConfig = CheckpointConfig()

    def accumulation_steps(self, world_size: int) -> int:
        """Gradient accumulation that makes the configured global batch on ``world_size`` ranks."""
        per_update = self.per_device_batch_size * world_size
        if self.global_batch_size % per_update:
            raise ConfigError(
                f"global_batch_size {self.global_batch_size} is not a multiple of per_device_batch_size "
                f"{self.per_device_batch_size} x {world_size} ranks"
            )
        return self.global_batch_size // per_update


def world_size() -> int:
    """Ranks in this launch (torchrun, accelerate and Slurm's srun under torchrun all set WORLD_SIZE)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def configs_root() -> Path:
    local = Path.cwd() / "configs"
    return local if local.is_dir() else _REPO_CONFIGS


def deepspeed_config(value: str | None) -> dict[str, Any] | None:
    """A DeepSpeed config by name (configs/deepspeed/NAME.json) or path, with its ``_comment`` keys dropped."""
    if value is None:
        return None
    path = Path(value)
    if not path.is_file():
        folder = configs_root() / "deepspeed"
        path = folder / f"{value}.json"
        if not path.is_file():
            names = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
            raise ConfigError(f"deepspeed {value!r} is neither a JSON file nor one of the named configs {names} in {folder}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON DeepSpeed config ({exc})") from None
    # The first key of every checked-in config is "_comment" (the launch command): JSON has no comments.
    return {k: v for k, v in data.items() if not k.startswith("_")}


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"override {dotted}: {key} is not a section")
        node = child
    node[keys[-1]] = value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not KEY=VALUE (e.g. optim.lr=1e-5)")
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            value = text
        _set(data, key.strip(), value)
    return data


def _sentence(exc: ValidationError, source: str) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        return f"{source}: unknown key {where!r}"
    if err["type"] == "missing":
        return f"{source}: {where} is required"
    message = err["msg"].removeprefix("Value error, ")
    if not err["loc"]:  # a whole-config check: its message names the keys, the input is the whole config
        return f"{source}: {message}"
    return f"{source}: {where}: {message} (got {err.get('input')!r})"


def validate_config(model: type[M], data: Any, source: str) -> M:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a config is a mapping of keys to values, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_sentence(exc, source)) from None


def load_config(model: type[M], path: str | Path | None, overrides: list[str] = ()) -> M:
    """YAML file (optional) plus ``key=value`` overrides, validated into ``model``."""
    data: Any = {}
    source = "overrides"
    if path is not None:
        path = Path(path)
        source = str(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the config ({exc.strerror or exc})") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a config is a mapping of keys to values, got {type(data).__name__}")
    return validate_config(model, apply_overrides(data, list(overrides)), source)


def resolve_model(spec: str) -> str:
    """``tiny:PATH`` builds (once) the tiny local Qwen3 there; anything else is passed to from_pretrained."""
    if spec.startswith("tiny:"):
        from envtrain.agent.tiny import build_tiny_model

        return str(build_tiny_model(spec.removeprefix("tiny:")))
    return spec


__all__ = [
    "CheckpointConfig", "ConfigError", "OptimConfig", "Precision", "RunConfig", "apply_overrides", "configs_root",
    "deepspeed_config", "load_config", "resolve_model", "validate_config", "world_size",
]
