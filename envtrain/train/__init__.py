"""Training on environments: full-parameter SFT and GRPO on TRL, DeepSpeed ZeRO by name, recipes and launchers.

    config.py    typed config pieces, YAML + KEY=VALUE overrides, named DeepSpeed configs
    encode.py    trajectories to input ids and labels (assistant-only, per-turn masks)
    sft.py       SFT on TRL's SFTTrainer                       (envtrain sft)
    prompts.py   GRPO prompt sets: teacher pass band + exploration set (LegoEnv §5.4)
    episodes.py  GRPO rollouts driving envtrain sessions (TRL rollout_func)
    grpo.py      GRPO on TRL's GRPOTrainer, the verifier as reward  (envtrain grpo)
    hfargs.py    typed configs to TRL/HF trainer arguments
    logs.py      progress lines, metrics.jsonl, curves
    cli.py       the typer commands

Nothing here imports torch, transformers, TRL or DeepSpeed at module import.
"""
