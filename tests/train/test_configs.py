"""Every config under configs/ opens with the command that launches it and loads into its typed model;
bad configs fail with one sentence."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from envtrain.demo.config import DemoConfig
from envtrain.train.config import ConfigError, deepspeed_config, load_config
from envtrain.train.grpo import GRPORunConfig
from envtrain.train.sft import SFTRunConfig
from tests.train.kit import CONFIGS, ROOT

MODELS = {"sft": SFTRunConfig, "grpo": GRPORunConfig, "demo": DemoConfig}
ALL = sorted(p for p in CONFIGS.rglob("*") if p.is_file())
RECIPES = [p for p in ALL if p.suffix == ".yaml" and "accelerate" not in p.relative_to(CONFIGS).parts]
ACCELERATE = [p for p in ALL if p.suffix == ".yaml" and p not in RECIPES]
DEEPSPEED = [p for p in ALL if p.suffix == ".json"]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _recipe_command(command: str) -> tuple[str, str, list[str]]:
    """(verb, config path, overrides) of a launch command: the words around --config."""
    words = shlex.split(command.split("  #")[0], comments=False)
    at = words.index("--config")
    overrides = [w for w in words[at + 2:] if "=" in w and not w.startswith("-")]
    return words[at - 1], words[at + 1], overrides


def test_there_is_a_config_for_each_paper_setting_and_a_tiny_one_of_each() -> None:
    names = {_rel(p) for p in ALL}
    for name in ("res/sft_qwen3.5_4b.yaml", "res/sft_qwen3.5_9b.yaml", "res/sft_qwen3.5_35b_a3b.yaml", "legoenv/sft.yaml",
                 "legoenv/grpo.yaml", "envcraft/rl.yaml", "tiny/res_sft.yaml", "tiny/legoenv_sft.yaml",
                 "tiny/legoenv_grpo.yaml", "tiny/envcraft_rl.yaml", "deepspeed/zero3.json", "deepspeed/zero3_offload.json",
                 "deepspeed/zero2.json", "accelerate/zero3.yaml", "accelerate/zero3_offload.yaml", "accelerate/zero2.yaml"):
        assert f"configs/{name}" in names


@pytest.mark.parametrize("path", RECIPES, ids=_rel)
def test_each_recipe_config_opens_with_its_command_and_loads(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# "), f"{path}: the first line is the command that runs it"
    verb, config, overrides = _recipe_command(first[2:])
    assert config == _rel(path)
    cfg = load_config(MODELS[verb], path, overrides)
    for value in ([cfg.sft.get("deepspeed"), cfg.grpo.get("deepspeed")] if verb == "demo" else [cfg.deepspeed]):
        if value is not None:
            assert deepspeed_config(value)["zero_optimization"]["stage"] in (2, 3)


def test_the_recipe_configs_carry_the_papers_settings() -> None:
    res = {s: load_config(SFTRunConfig, CONFIGS / "res" / f"sft_qwen3.5_{s}.yaml") for s in ("4b", "9b", "35b_a3b")}
    assert [res[s].optim.lr for s in ("4b", "9b", "35b_a3b")] == [2e-5, 1e-5, 5e-6]  # RES Table A3
    for cfg in res.values():
        assert (cfg.epochs, cfg.max_length, cfg.global_batch_size, cfg.seed, cfg.data_seed) == (1, 49152, 16, 42, 42)
        o = cfg.optim
        assert (o.scheduler, o.warmup_ratio, o.betas, o.eps, o.weight_decay, o.max_grad_norm) == ("cosine", 0.03, (0.9, 0.95), 1e-8, 0.01, 1.0)
        assert (cfg.precision, cfg.deepspeed, cfg.gradient_checkpointing, cfg.overlength) == ("bf16", "zero3_offload", True, "exclude")
    lego = load_config(SFTRunConfig, CONFIGS / "legoenv" / "sft.yaml")
    assert (lego.epochs, lego.global_batch_size, lego.optim.lr, lego.optim.scheduler, lego.max_length) == (3, 32, 1e-5, "cosine", 65536)
    assert lego.checkpoint.every == "epoch"
    rl = load_config(GRPORunConfig, CONFIGS / "legoenv" / "grpo.yaml")
    assert (rl.group_size, rl.temperature, rl.epochs, rl.reward, rl.prompts.band, rl.prompts.exploration) == (8, 1.0, 2, "pass", (1, 6), True)
    ec = load_config(GRPORunConfig, CONFIGS / "envcraft" / "rl.yaml")
    assert (ec.optim.lr, ec.optim.scheduler, ec.optim.warmup_ratio, ec.optim.weight_decay) == (1e-6, "constant", 0.0, 0.01)


@pytest.mark.parametrize("path", ACCELERATE, ids=_rel)
def test_each_accelerate_config_opens_with_its_command_and_loads(path: Path) -> None:
    from accelerate.commands.config.config_args import ClusterConfig

    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(f"# accelerate launch --config_file {_rel(path)} ")
    cluster = ClusterConfig.from_yaml_file(str(path))  # accelerate refuses unknown keys itself
    ds_file = ROOT / cluster.deepspeed_config["deepspeed_config_file"]
    assert ds_file.is_file() and ds_file.stem == path.stem  # one DeepSpeed copy, the same name
    verb, config, overrides = _recipe_command(first[2:])
    assert "deepspeed=null" in overrides  # DeepSpeed is configured once: by accelerate here
    load_config(MODELS[verb], ROOT / config, overrides)


@pytest.mark.parametrize("path", DEEPSPEED, ids=_rel)
def test_each_deepspeed_config_opens_with_its_command_and_validates(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    first_key, command = next(iter(data.items()))
    assert first_key == "_comment"
    verb, config, overrides = _recipe_command(command)
    cfg = load_config(MODELS[verb], ROOT / config, overrides)
    assert (cfg.deepspeed or "") == path.stem or f"deepspeed={path.stem}" in overrides
    deepspeed = pytest.importorskip("deepspeed.runtime.zero.config")
    zero = {k: (10**6 if v == "auto" else v) for k, v in data["zero_optimization"].items()}  # "auto": filled by transformers
    deepspeed.DeepSpeedZeroConfig(**zero)  # DeepSpeed's own typed model (unknown keys refused)
    assert deepspeed_config(path.stem) == {k: v for k, v in data.items() if k != "_comment"}


def test_an_unknown_key_is_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((CONFIGS / "tiny" / "res_sft.yaml").read_text() + "optim_lr: 1\n")
    with pytest.raises(ConfigError) as err:
        load_config(SFTRunConfig, bad)
    assert str(err.value) == f"{bad}: unknown key 'optim_lr'"
    with pytest.raises(ConfigError, match=r"res_sft.yaml: unknown key 'optim.lrr'$"):
        load_config(SFTRunConfig, CONFIGS / "tiny" / "res_sft.yaml", ["optim.lrr=1"])
    with pytest.raises(ConfigError, match=r"optim.lr: Input should be greater than 0 \(got -1\)$"):
        load_config(SFTRunConfig, CONFIGS / "tiny" / "res_sft.yaml", ["optim.lr=-1"])
    with pytest.raises(ConfigError, match=r"is not KEY=VALUE"):
        load_config(SFTRunConfig, CONFIGS / "tiny" / "res_sft.yaml", ["optim.lr"])
    with pytest.raises(ConfigError, match=r"global_batch_size 6 must be a multiple of group_size 4"):
        load_config(GRPORunConfig, CONFIGS / "tiny" / "legoenv_grpo.yaml", ["group_size=4", "global_batch_size=6"])
    with pytest.raises(ConfigError, match=r"overrides: model is required$"):
        load_config(SFTRunConfig, None, ["dataset=x"])


def test_deepspeed_configs_are_chosen_by_name() -> None:
    assert deepspeed_config(None) is None
    assert deepspeed_config("zero3")["zero_optimization"]["stage"] == 3
    assert deepspeed_config(str(CONFIGS / "deepspeed" / "zero2.json"))["zero_optimization"]["stage"] == 2
    with pytest.raises(ConfigError, match=r"deepspeed 'zero4' is neither a JSON file nor one of the named configs \['zero2', 'zero3', 'zero3_offload'\]"):
        deepspeed_config("zero4")


def test_the_global_batch_sets_the_accumulation() -> None:
    cfg = load_config(SFTRunConfig, CONFIGS / "res" / "sft_qwen3.5_4b.yaml")
    assert cfg.accumulation_steps(4) == 4 and cfg.accumulation_steps(16) == 1
    with pytest.raises(ConfigError, match="global_batch_size 16 is not a multiple of per_device_batch_size 1 x 3 ranks"):
        cfg.accumulation_steps(3)
