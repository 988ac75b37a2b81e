"""SFT throughput: `envtrain sft` against TRL's SFTTrainer called directly, same tiny model, data and settings.

    .venv/bin/python benchmarks/train_sft_throughput.py [--quick] [--rounds 5] [--steps 4] [--threads 1]

Data: oracle trajectories of the example environments (``envtrain collect --policy oracle``), the
records over max_length left out of both arms alike. envtrain tokenizes with per-turn masks before
training; TRL tokenizes with ``assistant_only_loss`` in its constructor: that time is reported apart
(``prepare s``), and tokens/s is measured over ``trainer.train()`` alone, non-padding tokens as TRL
counts them, per wall second and per CPU second (the latter barely moves with other processes' load). Both trainers are built once and warmed by one untimed call; then ``--rounds`` rounds
alternate their order in one process, and the ratio is taken per round (the two runs adjacent in
time: the load of a shared machine drifts) and reported as the median. Target: ratio >= 0.95.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def collect_oracle(out: Path) -> Path:
    from envtrain.agent.baselines import OraclePolicy
    from envtrain.rollout.collect import CollectConfig, collect

    asyncio.run(collect(CollectConfig(envs=ROOT / "examples", out=out), OraclePolicy()))
    return out


def build_envtrain(cfg):
    from envtrain.train.sft import build_trainer

    trainer, _ = build_trainer(cfg, printer=lambda line: None)
    return trainer


def build_trl(cfg, data_dir: Path, out: Path):
    from datasets import load_from_disk
    from trl import SFTConfig, SFTTrainer

    from envtrain.train.hfargs import load_model, load_tokenizer, trainer_kwargs
    from envtrain.train.logs import quiet

    tokenizer = load_tokenizer(cfg.model)
    raw = load_from_disk(str(data_dir)).select_columns(["messages", "tools"])
    args = SFTConfig(**{**trainer_kwargs(cfg, cfg.optim), "output_dir": str(out)}, max_length=None, packing=False,
                     assistant_only_loss=True)
    trainer = SFTTrainer(model=load_model(cfg.model, cfg), args=args, train_dataset=raw, processing_class=tokenizer)
    quiet(trainer)
    return trainer


def timed_train(trainer) -> tuple[float, int, float]:
    """Wall seconds, non-padding tokens and CPU seconds (all threads) of one ``train()`` call (max_steps steps)."""
    before = trainer._total_train_tokens
    t0, c0 = time.perf_counter(), time.process_time()
    trainer.train()
    return time.perf_counter() - t0, trainer._total_train_tokens - before, time.process_time() - c0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 step, 1 round: a smoke run, not a measurement")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads; 1 by default: two threads on a shared 2-core box swing step times 2x")
    args = parser.parse_args(argv)
    rounds, steps = (1, 1) if args.quick else (args.rounds, args.steps)

    import torch
    from datasets.utils.logging import disable_progress_bar

    from envtrain.agent.tiny import build_tiny_model
    from envtrain.train.config import load_config
    from envtrain.train.encode import clean_messages, encode_conversation, training_template
    from envtrain.train.hfargs import load_tokenizer
    from envtrain.train.sft import SFTRunConfig, encode_dataset, load_records

    torch.set_num_threads(args.threads)
    disable_progress_bar()
    work = Path(tempfile.mkdtemp(prefix="envtrain-bench-sft-"))
    tiny = build_tiny_model(work / "tiny")
    data = collect_oracle(work / "oracle")
    overrides = [f"model={tiny}", f"dataset={data}", f"output_dir={work / 'envtrain'}", f"max_steps={steps}",
                 "logging_steps=1000", "checkpoint.save_steps=100000", "gradient_checkpointing=false"]
    cfg = load_config(SFTRunConfig, ROOT / "configs" / "tiny" / "res_sft.yaml", overrides)
    # Both arms train on the same records: the ones envtrain keeps under max_length.
    tokenizer = load_tokenizer(str(tiny))
    template = training_template(tokenizer)
    records = load_records(str(data))
    _, stats = encode_dataset(records, tokenizer, cfg)
    fits = [len(encode_conversation(tokenizer, clean_messages(r["messages"], "hermes"), r["tools"], r["turn_mask"], template).input_ids)
            <= cfg.max_length for r in records]
    kept = records.select([i for i, ok in enumerate(fits) if ok])
    kept.save_to_disk(str(work / "kept"))
    cfg = load_config(SFTRunConfig, ROOT / "configs" / "tiny" / "res_sft.yaml", [*overrides[:1], f"dataset={work / 'kept'}", *overrides[2:]])

    arms = {}
    prepare = {}
    for name, build in (("envtrain sft", lambda: build_envtrain(cfg)), ("TRL SFTTrainer", lambda: build_trl(cfg, work / "kept", work / "trl"))):
        t0 = time.perf_counter()
        arms[name] = build()
        prepare[name] = time.perf_counter() - t0
    for trainer in arms.values():  # untimed: first-call allocations and kernel selection
        timed_train(trainer)
    # Rounds alternate the order; each round's ratio compares two runs minutes apart at most, which matters on a
    # shared machine whose load drifts. The table reports medians.
    runs: dict[str, list[tuple[float, int, float]]] = {name: [] for name in arms}
    wall, cpu = [], []
    for r in range(rounds):
        order = list(arms) if r % 2 == 0 else list(reversed(arms))
        for name in order:
            runs[name].append(timed_train(arms[name]))
        (ws, wt, wc), (ts, tt, tc) = runs["envtrain sft"][-1], runs["TRL SFTTrainer"][-1]
        wall.append((wt / ws) / (tt / ts))
        cpu.append((wt / wc) / (tt / tc))
    print(f"{'arm':<16} {'steps':>5} {'tokens':>8} {'train s':>8} {'tokens/s':>9} {'tokens/cpu-s':>12} {'prepare s':>9}")
    for name, measured in runs.items():
        sec = statistics.median(m[0] for m in measured)
        rate = statistics.median(m[1] / m[0] for m in measured)
        cpu_rate = statistics.median(m[1] / m[2] for m in measured)
        print(f"{name:<16} {steps:>5} {measured[0][1]:>8} {sec:>8.2f} {rate:>9.1f} {cpu_rate:>12.1f} {prepare[name]:>9.2f}")
    print(f"ratio envtrain/TRL, tokens per wall second: median {statistics.median(wall):.3f} over {rounds} rounds "
          f"({', '.join(f'{x:.2f}' for x in wall)})")
    print(f"ratio envtrain/TRL, tokens per CPU second:  median {statistics.median(cpu):.3f} "
          f"({', '.join(f'{x:.2f}' for x in cpu)}); target >= 0.95")
    print(f"records: {len(kept)} of {stats.records} (over {cfg.max_length} tokens left out of both arms)")

if __name__ == "__main__":
    main()
