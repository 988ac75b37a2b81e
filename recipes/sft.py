"""Full-parameter SFT on envtrain trajectories, the whole recipe in one file: copy it and edit.

    python recipes/sft.py --config configs/tiny/res_sft.yaml [KEY=VALUE ...]
    torchrun --nproc_per_node 4 recipes/sft.py --config configs/res/sft_qwen3.5_4b.yaml

The same steps `envtrain sft` runs (envtrain/train/sft.py), written out in order. Change a step here
(another data mix, a different mask, an extra callback) without touching the library.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("overrides", nargs="*", help="KEY=VALUE, dotted for sections")
    args = parser.parse_args(argv)
    say = print if os.environ.get("RANK", "0") == "0" else (lambda *a, **k: None)

    from trl import SFTTrainer

    from envtrain.train.config import load_config, resolve_model
    from envtrain.train.hfargs import load_model, load_tokenizer, resume_point
    from envtrain.train.logs import make_callback, quiet
    from envtrain.train.sft import SFTRunConfig, encode_dataset, load_records, trl_config

    cfg = load_config(SFTRunConfig, args.config, args.overrides)

    # 1. Trainer arguments first: under ZeRO-3 they make from_pretrained load the model already partitioned.
    trl_args = trl_config(cfg)
    model_path = resolve_model(cfg.model)
    tokenizer = load_tokenizer(model_path)

    # 2. Data: each trajectory rendered once with its tools; loss on assistant turns, minus the turns turn_mask drops;
    #    records over max_length excluded (or truncated) and counted.
    data, stats = encode_dataset(load_records(cfg.dataset), tokenizer, cfg)
    say(f"data: {stats.model_dump()}")

    # 3. TRL's SFTTrainer, unchanged: it trains on the ready input_ids/labels.
    trainer = SFTTrainer(
        model=load_model(model_path, cfg), args=trl_args, train_dataset=data, processing_class=tokenizer,
        callbacks=[make_callback(cfg.output_dir, say, "sft")],
    )
    quiet(trainer)

    # 4. Train (resuming when asked), then save the final model in HF format.
    result = trainer.train(resume_from_checkpoint=resume_point(cfg))
    trainer.save_model(str(cfg.output_dir))
    say(f"done: {result.global_step} steps, mean loss {result.training_loss:.4f}, model in {cfg.output_dir}")


if __name__ == "__main__":
    main()
