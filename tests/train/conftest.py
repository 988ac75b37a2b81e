"""Fixtures for the training tests: one tiny model, a short trajectory dataset, a warmed model for GRPO."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.train.kit import oracle_dataset, warm_helpdesk_model, write_ledger_env

# DeepSpeed's CPU ops (shm comm, cpu_adam) compile once into a stable folder, so later runs reuse them.
os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(Path.home() / ".cache" / "envtrain" / "torch_extensions"))


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from envtrain.agent.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen3")


@pytest.fixture(scope="session")
def ledger_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four oracle trajectories on the hand-built ledger environment (about 600 tokens each)."""
    root = tmp_path_factory.mktemp("ledger")
    return oracle_dataset(write_ledger_env(root / "envs"), root / "data", attempts=4)


@pytest.fixture(scope="session")
def warm(tiny: Path) -> Path:
    return warm_helpdesk_model(tiny)
