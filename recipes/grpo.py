"""GRPO over envtrain environments with the verifier as the reward, the whole recipe in one file: copy it and edit.

    python recipes/grpo.py --config configs/tiny/legoenv_grpo.yaml [KEY=VALUE ...]
    torchrun --nproc_per_node 8 recipes/grpo.py --config configs/envcraft/rl.yaml

The same steps `envtrain grpo` runs (envtrain/train/grpo.py), written out in order.
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("overrides", nargs="*", help="KEY=VALUE, dotted for sections")
    args = parser.parse_args(argv)
    say = print if os.environ.get("RANK", "0") == "0" else (lambda *a, **k: None)

    from trl import GRPOTrainer

    from envtrain.agent.parsers import detect_family
    from envtrain.train.config import load_config, resolve_model
    from envtrain.train.episodes import EnvRollout, RolloutSettings
    from envtrain.train.grpo import GRPORunConfig, trl_config, verifier_reward
    from envtrain.train.hfargs import load_model, load_tokenizer, resume_point
    from envtrain.train.logs import make_callback, quiet
    from envtrain.train.prompts import build_prompt_set

    cfg = load_config(GRPORunConfig, args.config, args.overrides)

    # 1. Trainer arguments first (ZeRO-3 partitioned loading), then model and tokenizer.
    trl_args = trl_config(cfg)
    model_path = resolve_model(cfg.model)
    tokenizer = load_tokenizer(model_path)
    tokenizer.padding_side = "left"
    model = load_model(model_path, cfg)

    # 2. Prompts: the environments, mixed by teacher pass band plus the never-solved exploration set.
    prompts, envs, report = build_prompt_set(cfg.prompts)
    say(f"prompts: {report.model_dump()}")

    # 3. Rollouts: multi-turn episodes in envtrain sessions, exact token ids, logprobs and masks.
    settings = RolloutSettings(
        max_turns=cfg.max_turns, max_turn_tokens=cfg.max_turn_tokens, max_completion_tokens=cfg.max_completion_tokens,
        max_sequence_tokens=cfg.vllm.max_model_length or model.config.max_position_embeddings,
        mask_error_turns=cfg.mask_error_turns, family=detect_family(tokenizer),
    )

    # 4. TRL's GRPOTrainer with the verifier as the only reward.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*rollout_func.*experimental")
        trainer = GRPOTrainer(
            model=model, reward_funcs=[verifier_reward(cfg.reward)], args=trl_args, train_dataset=prompts,
            processing_class=tokenizer, rollout_func=EnvRollout(envs, tokenizer, settings),
            callbacks=[make_callback(cfg.output_dir, say, "grpo")],
        )
    quiet(trainer)

    # 5. Train (resuming when asked), then save the final model in HF format.
    result = trainer.train(resume_from_checkpoint=resume_point(cfg))
    trainer.save_model(str(cfg.output_dir))
    say(f"done: {result.global_step} steps, model in {cfg.output_dir}")


if __name__ == "__main__":
    main()
