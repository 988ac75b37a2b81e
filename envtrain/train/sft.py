"""Full-parameter SFT on trajectory datasets (``envtrain collect`` output), built on TRL's SFTTrainer.

    cfg = load_config(SFTRunConfig, "configs/res/sft_qwen3.5_4b.yaml", overrides)
    summary = run_sft(cfg, printer=print)

Each record is rendered once by the chat template with its tools and tokenized here (see
``envtrain.train.encode``): the loss covers assistant turns only (reasoning, tool calls, replies),
minus the turns ``turn_mask`` drops (answered by a 4xx tool error). Records longer than
``max_length`` are excluded, not truncated (RES App. B), and counted. TRL's SFTTrainer then trains
on the ready ``input_ids``/``labels`` unchanged: its loop, collator and loss are TRL's own.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from envtrain.train.config import ConfigError, OptimConfig, RunConfig, resolve_model
from envtrain.train.logs import Printer, make_callback, quiet, read_metrics


class SFTRunConfig(RunConfig):
    """An SFT run. RES Table A3 and LegoEnv App. E settings live in configs/res/ and configs/legoenv/."""

    dataset: str  # a saved dataset folder (envtrain collect OUT), or hub:OWNER/NAME for a pushed one
    max_length: int = Field(default=32768, ge=16)  # tokens per record after rendering, tools included
    overlength: Literal["exclude", "truncate"] = "exclude"  # exclude (RES App. B) or keep the first max_length tokens
    chat_template: str | None = None  # a template with {% generation %} markers (path or text); null: the model's or TRL's training variant
    dataset_num_proc: int | None = None  # processes for tokenizing; null tokenizes in this process
    optim: OptimConfig


class EncodeStats(BaseModel):
    records: int  # rows in the dataset
    kept: int  # rows trained on
    overlength: int  # rows longer than max_length (excluded, or truncated when overlength=truncate)
    untrainable: int  # rows whose every assistant turn is masked out
    unrenderable: int  # rows the chat template could not render with per-turn masks
    tokens: int  # tokens in the kept rows
    trained_tokens: int  # tokens carrying loss in the kept rows
    first_error: str = ""


class SFTSummary(BaseModel):
    output_dir: str
    steps: int
    first_loss: float | None
    last_loss: float | None
    train_loss: float | None
    tokens: int  # tokens processed by training (non-padding, all ranks)
    seconds: float
    tokens_per_second: float
    data: EncodeStats


def load_records(spec: str) -> Any:
    """A saved dataset folder (``datasets.load_from_disk``), or ``hub:OWNER/NAME`` (its train split)."""
    from datasets import DatasetDict, load_dataset, load_from_disk

    if spec.startswith("hub:"):
        return load_dataset(spec.removeprefix("hub:"), split="train")
    if not Path(spec).is_dir():
        raise ConfigError(f"dataset {spec!r} is not a saved dataset folder (run envtrain collect first) nor hub:OWNER/NAME")
    data = load_from_disk(spec)
    if isinstance(data, DatasetDict):
        if "train" not in data:
            raise ConfigError(f"dataset {spec!r} has splits {list(data)} but no 'train'")
        data = data["train"]
    missing = {"messages", "tools"} - set(data.column_names)
    if missing:
        raise ConfigError(f"dataset {spec!r} lacks the column(s) {sorted(missing)} a trajectory dataset has")
    return data


def encode_dataset(records: Any, tokenizer: Any, cfg: SFTRunConfig) -> tuple[Any, EncodeStats]:
    """``input_ids``/``labels`` rows ready for SFTTrainer, and what was kept or dropped."""
    from envtrain.agent.parsers import detect_family
    from envtrain.train.encode import IGNORE, EncodeError, clean_messages, encode_conversation, training_template

    template = training_template(tokenizer, cfg.chat_template)
    family = detect_family(tokenizer)
    has_mask = "turn_mask" in records.column_names

    def encode(row: dict[str, Any]) -> dict[str, Any]:
        try:
            enc = encode_conversation(tokenizer, clean_messages(row["messages"], family), row["tools"],
                                      row["turn_mask"] if has_mask else None, template)
        except (EncodeError, ValueError, TypeError) as exc:  # jinja errors are ValueError/TypeError subclasses too
            return {"input_ids": [], "labels": [], "length": 0, "trained": 0, "error": f"{type(exc).__name__}: {exc}"}
        ids, labels = enc.input_ids, enc.labels
        if len(ids) > cfg.max_length and cfg.overlength == "truncate":
            ids, labels = ids[: cfg.max_length], labels[: cfg.max_length]
        trained = sum(label != IGNORE for label in labels)
        return {"input_ids": ids, "labels": labels, "length": len(enc.input_ids), "trained": trained, "error": ""}

    encoded = records.map(encode, remove_columns=records.column_names, num_proc=cfg.dataset_num_proc,
                          desc="encoding trajectories")
    # Bookkeeping reads the small columns only: the token columns stay on disk (Arrow), however big the set.
    meta = encoded.select_columns(["length", "trained", "error"]).to_list()
    fits = [not m["error"] and (m["length"] <= cfg.max_length or cfg.overlength == "truncate") for m in meta]
    keep = [i for i, (m, ok) in enumerate(zip(meta, fits)) if ok and m["trained"] > 0]
    errors = [m["error"] for m in meta if m["error"]]
    kept = encoded.select(keep).remove_columns(["length", "trained", "error"])
    stats = EncodeStats(
        records=len(records), kept=len(keep),
        overlength=sum(1 for m in meta if not m["error"] and m["length"] > cfg.max_length),
        untrainable=sum(1 for m, ok in zip(meta, fits) if ok and m["trained"] == 0),
        unrenderable=len(errors),
        tokens=sum(min(meta[i]["length"], cfg.max_length) for i in keep),
        trained_tokens=sum(meta[i]["trained"] for i in keep),
        first_error=errors[0] if errors else "",
    )
    return kept, stats


def trl_config(cfg: SFTRunConfig) -> Any:
    from trl import SFTConfig

    from envtrain.train.hfargs import trainer_kwargs

    return SFTConfig(
        **trainer_kwargs(cfg, cfg.optim),
        max_length=None,  # lengths were enforced when encoding (excluded or truncated there)
        packing=False,  # RES App. B: no packing
        assistant_only_loss=False,  # the labels already carry the assistant and per-turn masks
        dataset_num_proc=cfg.dataset_num_proc,
    )


def build_trainer(cfg: SFTRunConfig, printer: Printer) -> tuple[Any, EncodeStats]:
    """TRL's SFTTrainer over the encoded dataset, with the progress callback attached."""
    from trl import SFTTrainer

    from envtrain.train.hfargs import load_model, load_tokenizer

    args = trl_config(cfg)  # before the model: under ZeRO-3 it makes from_pretrained load partitioned
    model_path = resolve_model(cfg.model)
    tokenizer = load_tokenizer(model_path)
    dataset, stats = encode_dataset(load_records(cfg.dataset), tokenizer, cfg)
    printer(
        f"sft data: {stats.records} records, {stats.kept} kept; {stats.overlength} over {cfg.max_length} tokens "
        f"({'excluded' if cfg.overlength == 'exclude' else 'truncated'}), {stats.untrainable} with every turn masked, "
        f"{stats.unrenderable} unrenderable; {stats.tokens} tokens, {stats.trained_tokens} trained"
    )
    if stats.first_error:
        printer(f"sft data: first unrenderable record: {stats.first_error}")
    if not stats.kept:
        raise ConfigError(f"dataset {cfg.dataset!r} has no record to train on within max_length {cfg.max_length}")
    trainer = SFTTrainer(
        model=load_model(model_path, cfg),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[make_callback(cfg.output_dir, printer, "sft")],
    )
    quiet(trainer)
    return trainer, stats


def run_sft(cfg: SFTRunConfig, printer: Printer = print) -> SFTSummary:
    """Train, checkpoint, resume when asked, and save the final model (HF format) in ``output_dir``."""
    from envtrain.train.hfargs import resume_point

    resume = resume_point(cfg)
    if resume is None:
        (Path(cfg.output_dir) / "metrics.jsonl").unlink(missing_ok=True)  # a fresh run starts a fresh curve
    else:
        printer(f"sft: resuming from {resume}")
    trainer, stats = build_trainer(cfg, printer)
    start = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - start
    trainer.save_model(str(cfg.output_dir))  # model, config, tokenizer: loadable by from_pretrained, servable by vLLM
    losses = [r["loss"] for r in read_metrics(cfg.output_dir) if r.get("loss") is not None]
    tokens = int(getattr(trainer, "_total_train_tokens", 0))
    return SFTSummary(
        output_dir=str(cfg.output_dir), steps=result.global_step,
        first_loss=losses[0] if losses else None, last_loss=losses[-1] if losses else None,
        train_loss=result.training_loss, tokens=tokens, seconds=seconds,
        tokens_per_second=tokens / seconds if seconds > 0 else 0.0, data=stats,
    )


__all__ = ["EncodeStats", "SFTRunConfig", "SFTSummary", "build_trainer", "encode_dataset", "load_records", "run_sft", "trl_config"]
