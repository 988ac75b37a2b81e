"""The demo's one typed config: every stage's settings, the embedded CPU default, and YAML loading.

    cfg = load_demo_config(None)                                  # the embedded default (CPU, tiny model)
    cfg = load_demo_config("configs/demo/gpu.yaml", ["sft.max_steps=10"])

``sft`` and ``grpo`` hold keys of ``envtrain sft`` / ``envtrain grpo`` configs (envtrain.train): the demo
fills in the model, data and output folders and validates the result when the config loads, so a typo
fails in the first second rather than after composing and scaling.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envtrain.core.io import content_hash


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ComposeStage(_Section):
    n: int = Field(default=240, ge=8)  # compose indices (each admitted or rejected with a reason)
    workers: int = Field(default=0, ge=0)  # processes; 0: one per CPU


class ScaleStage(_Section):
    roots_train: int = Field(default=8, ge=0)  # train-side environments scaled (their lineages join the train split)
    roots_heldout: int = Field(default=8, ge=1)  # held-out environments scaled (their lineages are the scaled eval set)
    depth: int = Field(default=3, ge=1, le=50)  # RES depth cap
    workers: int = Field(default=0, ge=0)


class SplitStage(_Section):
    heldout_share: float = Field(default=0.25, gt=0, lt=1)  # share of seed-skeleton families held out


class ModelStage(_Section):
    # "tiny": build a 2-layer Qwen3 here, its byte-level BPE trained on the train split's text only
    # (held-out text never shapes the tokenizer); anything else: a local checkpoint or Hub id.
    base: str = "tiny"
    tiny_layers: int = Field(default=2, ge=1)
    tiny_hidden: int = Field(default=64, ge=16)
    tiny_vocab: int = Field(default=4096, ge=512)


class CollectStage(_Section):
    # oracle replays each reference solution: a fixture, allowed as the demo teacher and labelled so everywhere.
    # openai:URL[,URL], vllm:MODEL or hf:PATH for a real teacher.
    teacher: str = "oracle"
    attempts: int = Field(default=1, ge=1)
    keep_per_env: int = Field(default=1, ge=1)
    max_turns: int = Field(default=200, ge=1)  # scaled environments need long reference paths (the oracle replays one call a turn)
    max_tokens: int = Field(default=2048, ge=1)  # per teacher turn
    temperature: float = Field(default=0.7, ge=0)
    concurrency: int = Field(default=8, ge=1)


class TrainStage(_Section):
    # launcher "python" trains in this process; "torchrun" starts `torchrun --nproc_per_node N envtrain sft|grpo`
    # on the config the demo writes (multi-GPU, ZeRO-3).
    launcher: Literal["python", "torchrun"] = "python"
    nproc_per_node: int = Field(default=1, ge=1)


class EvalStage(_Section):
    backend: Literal["hf", "vllm"] = "hf"  # how checkpoints generate: transformers (CPU/GPU) or the vLLM engine
    bfcl_categories: tuple[str, ...] = ("base",)  # BFCL v4 multi-turn categories sampled
    bfcl_per_category: int = Field(default=4, ge=0)  # tasks per category (0 skips BFCL)
    max_turns: int = Field(default=6, ge=1)
    max_tokens: int = Field(default=48, ge=1)  # per assistant turn
    # Sampled, not greedy: a few minutes of CPU SFT leave the tiny model's greedy path on one token (a newline), while
    # its samples do call tools; 0 gives greedy decoding.
    temperature: float = Field(default=0.7, ge=0)
    attempts: int = Field(default=1, ge=1)  # per task; pass@k for k up to this
    max_seconds: float = Field(default=120.0, gt=0)
    concurrency: int = Field(default=4, ge=1)


TINY_SFT: dict[str, Any] = {
    "precision": "fp32", "seed": 0, "epochs": 1, "max_steps": 80, "max_length": 8192, "per_device_batch_size": 1,
    "global_batch_size": 2, "optim": {"lr": 1.0e-2, "scheduler": "constant_with_warmup", "warmup_ratio": 0.05},
    "checkpoint": {"save_steps": 40, "save_total_limit": 1},
}
TINY_GRPO: dict[str, Any] = {
    "precision": "fp32", "seed": 0, "reward": "score", "group_size": 4, "temperature": 1.0, "loss_type": "dapo",
    "beta": 0.0, "max_steps": 20, "per_device_batch_size": 4, "global_batch_size": 4, "max_turns": 3,
    "max_turn_tokens": 48, "max_completion_tokens": 512, "optim": {"lr": 5.0e-4, "scheduler": "constant"},
    "checkpoint": {"save_steps": 10, "save_total_limit": 1},
}


class DemoConfig(_Section):
    """``envtrain demo``: compose → scale → split → collect → SFT → GRPO → eval → report."""

    seed: int = 0
    compose: ComposeStage = ComposeStage()
    scale: ScaleStage = ScaleStage()
    split: SplitStage = SplitStage()
    model: ModelStage = ModelStage()
    collect: CollectStage = CollectStage()
    train: TrainStage = TrainStage()
    sft: dict[str, Any] = Field(default_factory=lambda: dict(TINY_SFT))  # envtrain sft keys (model, dataset, output_dir are the demo's)
    grpo: dict[str, Any] = Field(default_factory=lambda: dict(TINY_GRPO))  # envtrain grpo keys (model, prompts, output_dir are the demo's)
    eval: EvalStage = EvalStage()

    @model_validator(mode="after")
    def _training_keys_valid(self) -> DemoConfig:
        owned = {"model", "dataset", "output_dir", "prompts"}
        for name, keys in (("sft", self.sft), ("grpo", self.grpo)):
            taken = sorted(owned & set(keys))
            if taken:
                raise ValueError(f"{name}.{taken[0]} is set by the demo itself (it chains the stages); remove it")
        sft_config(self, Path("sft"), "base", Path("data"))  # raises ConfigError naming the key
        grpo_config(self, Path("grpo"), "sft", Path("envs"), None)
        return self

    @property
    def hash(self) -> str:
        return content_hash(self.model_dump(mode="json"))

    @property
    def teacher_is_oracle(self) -> bool:
        return self.collect.teacher.strip() == "oracle"


def sft_config(cfg: DemoConfig, output_dir: Path, model: str, dataset: Path) -> Any:
    from envtrain.train.config import validate_config
    from envtrain.train.sft import SFTRunConfig

    data = {**cfg.sft, "model": model, "dataset": str(dataset), "output_dir": str(output_dir)}
    return validate_config(SFTRunConfig, data, "demo config, section sft")


def grpo_config(cfg: DemoConfig, output_dir: Path, model: str, envs: Path, teacher: Path | None) -> Any:
    from envtrain.train.config import validate_config
    from envtrain.train.grpo import GRPORunConfig

    prompts: dict[str, Any] = {"envs": str(envs)}
    if teacher is not None:
        prompts.update(teacher=str(teacher), band=[1, cfg.collect.attempts], exploration=True)
    data = {**cfg.grpo, "model": model, "prompts": prompts, "output_dir": str(output_dir)}
    return validate_config(GRPORunConfig, data, "demo config, section grpo")


def load_demo_config(path: str | Path | None, overrides: list[str] = ()) -> DemoConfig:
    """The embedded default, or a YAML file, plus dotted ``key=value`` overrides; ConfigError on bad input.

    A section the file names replaces the default section whole (a GPU recipe's ``sft`` keeps none of the
    tiny CPU keys); an override then edits one key of the resolved config.
    """
    from envtrain.train.config import apply_overrides, load_config, validate_config

    cfg = load_config(DemoConfig, path)
    if not overrides:
        return cfg
    data = apply_overrides(cfg.model_dump(mode="json"), list(overrides))
    return validate_config(DemoConfig, data, f"{path or 'demo config'} with overrides")


__all__ = ["DemoConfig", "grpo_config", "load_demo_config", "sft_config"]
