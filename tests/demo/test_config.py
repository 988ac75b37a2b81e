"""The demo config: the embedded default, YAML sections, overrides, and one-sentence errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from envtrain.demo.config import DemoConfig, load_demo_config, sft_config
from envtrain.train.config import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_default_is_the_cpu_tiny_config_and_chains_the_stages(tmp_path: Path) -> None:
    cfg = load_demo_config(None)
    assert cfg == DemoConfig()
    assert cfg.model.base == "tiny" and cfg.teacher_is_oracle
    run = sft_config(cfg, tmp_path / "sft", "base-path", tmp_path / "data")
    assert run.model == "base-path" and run.dataset == str(tmp_path / "data") and run.precision == "fp32"


def test_an_override_edits_one_key_and_keeps_the_rest() -> None:
    cfg = load_demo_config(None, ["sft.max_steps=5", "compose.n=64"])
    assert cfg.sft["max_steps"] == 5 and cfg.sft["optim"] == DemoConfig().sft["optim"]
    assert cfg.compose.n == 64 and cfg.hash != DemoConfig().hash


@pytest.mark.parametrize("override, words", [
    (["scale.depthh=3"], "unknown key 'scale.depthh'"),
    (["sft.optim.lr=-1"], "section sft: optim.lr"),
    (["sft.model=x"], "sft.model is set by the demo itself"),
    (["grpo.group_size=3"], "multiple of group_size"),
    (["eval.backend=tgi"], "eval.backend"),
])
def test_bad_keys_fail_at_load_with_the_key_named(override: list[str], words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace(".", r"\.").replace("(", r"\(")):
        load_demo_config(None, override)


def test_a_yaml_section_replaces_the_default_section(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text("sft:\n  epochs: 2\n  optim: {lr: 1.0e-5}\n", encoding="utf-8")
    cfg = load_demo_config(path)
    assert cfg.sft == {"epochs": 2, "optim": {"lr": 1.0e-5}}  # none of the tiny keys leak into a recipe


def test_the_checked_in_gpu_recipe_validates() -> None:
    cfg = load_demo_config(REPO / "configs" / "demo" / "gpu.yaml")
    assert cfg.model.base != "tiny" and not cfg.teacher_is_oracle
    assert cfg.sft.get("deepspeed") == "zero3" and cfg.train.launcher == "torchrun"
    first = (REPO / "configs" / "demo" / "gpu.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# envtrain demo --config configs/demo/gpu.yaml")
