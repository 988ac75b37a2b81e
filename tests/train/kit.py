"""Shared pieces for the training tests: tiny datasets, config loading with overrides, a warmed tiny model."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
EXAMPLES = ROOT / "examples"
HELPDESK = EXAMPLES / "helpdesk_escalation.yaml"

# Built once per machine and reused: warming the tiny model costs about a minute on two cores.
CACHE = Path(os.environ.get("ENVTRAIN_TEST_CACHE", Path.home() / ".cache" / "envtrain" / "test-models"))
WARM_STEPS = 75  # at lr 5e-3: the first two writes mostly right at temperature 1, not always (GRPO needs the spread)
WARM_VERSION = 1  # bump when the warm-up recipe changes


def oracle_dataset(env_file: Path, out: Path, attempts: int = 1) -> Path:
    """``envtrain collect`` with the oracle on one environment file: a real trajectory dataset."""
    from envtrain.agent.baselines import OraclePolicy
    from envtrain.rollout.collect import CollectConfig, collect

    asyncio.run(collect(CollectConfig(envs=env_file, out=out, attempts=attempts, keep_per_env=attempts), OraclePolicy()))
    return out


def write_ledger_env(folder: Path) -> Path:
    """The hand-built ledger environment of tests/conftest.py as a document (3 tools, short prompts)."""
    from tests.conftest import ledger_env

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ledger.json"
    path.write_text(ledger_env().model_dump_json(), encoding="utf-8")
    return path


def sft_config(tiny: Path, data: Path, out: Path, *extra: str) -> Any:
    """The shipped tiny RES SFT config, pointed at a test model, dataset and folder."""
    from envtrain.train.config import load_config
    from envtrain.train.sft import SFTRunConfig

    return load_config(SFTRunConfig, CONFIGS / "tiny" / "res_sft.yaml",
                       [f"model={tiny}", f"dataset={data}", f"output_dir={out}", *extra])


def solution_rows(env_file: Path, skip: tuple[str, ...], turns: int) -> list[dict[str, Any]]:
    """One trajectory row that replays the first ``turns`` reference calls not named in ``skip``, with the
    environment's real answers, in envtrain's message format (the last tool answer dropped)."""
    from envtrain.core import Environment, Runtime
    from envtrain.rollout.episode import first_messages

    env = Environment.load(env_file)
    runtime = Runtime(env)
    calls = [c for c in env.reference_solution if c.tool not in skip][:turns]
    messages = first_messages(runtime)
    with runtime.session() as session:
        session.reset()
        for i, call in enumerate(calls):
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": f"call_{i}", "type": "function", "function": {"name": call.tool, "arguments": json.dumps(call.arguments)}}]})
            result = session.step({"tool": call.tool, "arguments": call.arguments})
            assert result.ok, result.message
            messages.append({"role": "tool", "tool_call_id": f"call_{i}", "name": call.tool, "content": result.content()})
    return [{"messages": messages[:-1], "tools": json.dumps(runtime.openai_tools), "turn_mask": [1] * len(calls)}]


def warm_helpdesk_model(tiny: Path) -> Path:
    """The tiny model SFT-warmed on helpdesk_escalation's first two writes (escalate, comment), cached by a stamp."""
    from datasets import Dataset

    from envtrain.agent.tiny import BUILD_VERSION
    from envtrain.train.sft import run_sft

    stamp_value = json.dumps({"warm": WARM_VERSION, "tiny": BUILD_VERSION, "steps": WARM_STEPS})
    out = CACHE / f"warm-helpdesk-{WARM_VERSION}"
    stamp = out / "envtrain_warm.json"
    if stamp.is_file() and stamp.read_text() == stamp_value:
        return out
    data = CACHE / f"warm-helpdesk-data-{WARM_VERSION}"
    Dataset.from_list(solution_rows(HELPDESK, skip=("list_tickets",), turns=2)).save_to_disk(str(data))
    cfg = sft_config(tiny, data, out, "optim.lr=5e-3", "optim.scheduler=constant", "optim.warmup_ratio=0",
                     "optim.weight_decay=0", f"max_steps={WARM_STEPS}", "global_batch_size=1",
                     "gradient_checkpointing=false", "checkpoint.save_steps=100000", "logging_steps=25")
    run_sft(cfg, printer=lambda line: None)
    stamp.write_text(stamp_value)
    return out
