"""SFT on TRL's SFTTrainer: the loss falls, every parameter moves, checkpoints resume on the same curve,
over-length records are excluded and counted, the final model loads in HF format."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from envtrain.train.config import ConfigError
from envtrain.train.logs import read_metrics
from tests.train.kit import sft_config


def _losses(out: Path) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in read_metrics(out) if r.get("loss") is not None}


def test_loss_falls_and_every_parameter_changes(tiny: Path, ledger_data: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from envtrain.train.sft import run_sft

    out = tmp_path / "sft"
    lines: list[str] = []
    summary = run_sft(sft_config(tiny, ledger_data, out, "max_steps=6", "logging_steps=1", "optim.lr=3e-3"), printer=lines.append)
    losses = _losses(out)
    assert sorted(losses) == [1, 2, 3, 4, 5, 6]
    assert losses[6] < losses[1] - 0.5, losses  # 4 identical short records: the tiny model fits them fast
    assert summary.steps == 6 and summary.data.kept == 4 and summary.data.overlength == 0
    assert summary.tokens > 0 and summary.tokens_per_second > 0
    assert any(line.startswith("sft data: 4 records, 4 kept") for line in lines)
    assert any(line.startswith("sft step 6/6") for line in lines)
    before = dict(AutoModelForCausalLM.from_pretrained(tiny).named_parameters())
    after = dict(AutoModelForCausalLM.from_pretrained(out).named_parameters())  # the final model, HF format
    assert before.keys() == after.keys()
    unchanged = [n for n, p in after.items() if p.detach().equal(before[n].detach())]
    assert unchanged == [], f"parameters that did not move: {unchanged}"
    assert AutoTokenizer.from_pretrained(out).chat_template  # the tokenizer is saved beside the weights


def test_resume_from_a_checkpoint_continues_the_same_loss_curve(tiny: Path, ledger_data: Path, tmp_path: Path) -> None:
    from envtrain.train.sft import run_sft

    common = ("max_steps=4", "checkpoint.save_steps=2", "checkpoint.save_total_limit=null", "global_batch_size=2", "logging_steps=1")
    straight = tmp_path / "straight"
    run_sft(sft_config(tiny, ledger_data, straight, *common), printer=lambda line: None)
    # A run stopped after step 2 leaves exactly this checkpoint behind: model, optimizer, scheduler, RNG, data position.
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    shutil.copytree(straight / "checkpoint-2", resumed / "checkpoint-2")
    run_sft(sft_config(tiny, ledger_data, resumed, *common, "checkpoint.resume=true"), printer=lambda line: None)
    a, b = _losses(straight), _losses(resumed)
    assert sorted(b) == [3, 4]  # it started at step 3, not from scratch
    for step in (3, 4):
        # Same machine, same seed, same data order: the continuation is the same computation, up to float noise.
        assert math.isclose(a[step], b[step], rel_tol=1e-5), (step, a[step], b[step])


def test_overlength_records_are_excluded_not_truncated(tiny: Path, ledger_data: Path, tmp_path: Path) -> None:
    from envtrain.train.hfargs import load_tokenizer
    from envtrain.train.sft import encode_dataset, load_records

    records = load_records(str(ledger_data))
    tokenizer = load_tokenizer(str(tiny))
    full, stats = encode_dataset(records, tokenizer, sft_config(tiny, ledger_data, tmp_path, "max_length=4096"))
    length = len(full[0]["input_ids"])
    assert stats.kept == 4 and stats.overlength == 0 and stats.tokens == 4 * length
    short = sft_config(tiny, ledger_data, tmp_path, f"max_length={length - 1}")
    kept, stats = encode_dataset(records, tokenizer, short)
    assert len(kept) == 0 and stats.overlength == 4 and stats.kept == 0
    cut, stats = encode_dataset(records, tokenizer, sft_config(tiny, ledger_data, tmp_path, f"max_length={length - 1}", "overlength=truncate"))
    assert stats.overlength == 4 and stats.kept == 4 and all(len(r["input_ids"]) == length - 1 for r in cut)
    from envtrain.train.sft import run_sft

    with pytest.raises(ConfigError, match=f"no record to train on within max_length {length - 1}"):
        run_sft(short, printer=lambda line: None)


def test_a_dataset_that_is_not_a_trajectory_set_is_refused(tiny: Path, tmp_path: Path) -> None:
    from datasets import Dataset

    from envtrain.train.sft import load_records

    with pytest.raises(ConfigError, match="is not a saved dataset folder"):
        load_records(str(tmp_path / "nowhere"))
    Dataset.from_list([{"text": "hello"}]).save_to_disk(str(tmp_path / "plain"))
    with pytest.raises(ConfigError, match=r"lacks the column\(s\) \['messages', 'tools'\]"):
        load_records(str(tmp_path / "plain"))
