"""Collection with a real (tiny, local) model, and TRL's SFTTrainer taking the dataset as it is."""

from __future__ import annotations

import asyncio
import math
import shutil
from pathlib import Path

import pytest
from datasets import load_from_disk

from envtrain.agent.baselines import OraclePolicy
from envtrain.agent.tiny import build_tiny_model
from envtrain.agent.types import SamplingParams
from envtrain.rollout.collect import CollectConfig, collect
from envtrain.rollout.episode import RolloutLimits
from envtrain.rollout.store import TrajectoryStore
from envtrain.rollout.trajectory import STOP_REASONS, Trajectory

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def two_envs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("envs")
    for name in ("helpdesk_escalation.yaml", "invoicing_payment_run.yaml"):
        shutil.copy(EXAMPLES / name, folder / name)
    return folder


def test_the_tiny_model_completes_episodes_with_token_records(tiny, two_envs, tmp_path) -> None:
    from envtrain.agent.hf import HFPolicy

    policy = HFPolicy(str(tiny))
    cfg = CollectConfig(envs=two_envs, out=tmp_path, attempts=2, sampling=SamplingParams(max_tokens=24, seed=0),
                        limits=RolloutLimits(max_turns=2))
    summary = asyncio.run(collect(cfg, policy))
    assert summary.attempts == 4 and summary.completion_tokens > 0
    records = [Trajectory.model_validate_json(r) for r in TrajectoryStore(tmp_path).all()["record"]]
    for traj in records:
        assert traj.stop_reason in STOP_REASONS and traj.stop_reason != "error", traj.error
        assert traj.policy == f"hf:{tiny}"
        for turn in traj.turns:
            assert turn.token_ids and len(turn.token_ids) == len(turn.logprobs) <= 24 + 1
            assert all(math.isfinite(x) and x <= 0 for x in turn.logprobs)
            assert turn.prompt_token_ids and turn.prompt_tokens == len(turn.prompt_token_ids)
        # A random model's turns are garbage: either it said something (done), ran out of tokens, or of turns.
        if traj.stop_reason == "turn_limit":
            assert traj.num_turns == 2


def test_sft_trainer_accepts_the_dataset_unchanged(tiny, two_envs, tmp_path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    asyncio.run(collect(CollectConfig(envs=two_envs, out=tmp_path / "data"), OraclePolicy()))
    dataset = load_from_disk(str(tmp_path / "data"))
    assert len(dataset) == 2
    model = AutoModelForCausalLM.from_pretrained(tiny)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer = SFTTrainer(
        model=model,
        processing_class=AutoTokenizer.from_pretrained(tiny),
        train_dataset=dataset,
        args=SFTConfig(output_dir=str(tmp_path / "sft"), max_steps=2, per_device_train_batch_size=2, learning_rate=1e-3,
                       report_to=[], use_cpu=True, save_strategy="no", logging_steps=1, max_length=None),
    )
    result = trainer.train()
    assert math.isfinite(result.training_loss) and result.training_loss > 0
    changed = [n for n, p in model.named_parameters() if not p.detach().equal(before[n])]
    assert len(changed) == len(before), "every parameter should move after two steps"
