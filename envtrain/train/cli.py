"""``envtrain sft`` and ``envtrain grpo``: typer command functions, registered by envtrain/cli.py.

    envtrain sft --config configs/res/sft_qwen3.5_4b.yaml optim.lr=1e-5 output_dir=runs/sft
    torchrun --nproc_per_node 8 --no-python envtrain grpo --config configs/legoenv/grpo.yaml

Overrides are KEY=VALUE pairs (dotted keys, YAML values). ``--check`` validates and prints the
resolved config without training. Bad input exits 2 with one sentence; progress lines and the
summary table print on rank 0 only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import typer

CONFIG_HELP = "A recipe YAML (configs/...); its first line is the command that runs it."
OVERRIDES_HELP = "KEY=VALUE overrides, dotted for sections: optim.lr=1e-5 max_steps=10 deepspeed=zero3"


def _rank0() -> bool:
    return os.environ.get("RANK", "0") == "0"


def _printer(line: str) -> None:
    if _rank0():
        print(line, flush=True)


def _die(message: str, code: int = 2) -> NoReturn:
    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True).print("error:", message, style="bold red", markup=False)
    raise typer.Exit(code)


def _table(title: str, rows: list[tuple[str, str]]) -> None:
    if not _rank0():
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    Console(highlight=False, soft_wrap=True).print(table)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _run(kind: str, config: Path | None, overrides: list[str], check: bool, go: Callable[[Any], list[tuple[str, str]]]) -> None:
    from envtrain.core.errors import SpecError
    from envtrain.train.config import ConfigError, load_config

    if kind == "sft":
        from envtrain.train.sft import SFTRunConfig as model
    else:
        from envtrain.train.grpo import GRPORunConfig as model  # type: ignore[assignment]
    if config is not None and not config.is_file():
        _die(f"{config}: no such config file")
    try:
        cfg = load_config(model, config, overrides or [])
    except ConfigError as exc:
        _die(str(exc))
    if check:
        print(cfg.model_dump_json(indent=1))
        return
    from envtrain.train.encode import EncodeError

    try:
        rows = go(cfg)
    except (ConfigError, SpecError, EncodeError) as exc:
        _die(str(exc))
    _table(f"envtrain {kind}", rows)


def sft_cmd(
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    overrides: list[str] | None = typer.Argument(None, help=OVERRIDES_HELP),
    check: bool = typer.Option(False, "--check", help="Validate the config, print it resolved, and exit."),
) -> None:
    """Full-parameter SFT on a trajectory dataset (assistant-only loss, 4xx-answered turns masked)."""

    def go(cfg: Any) -> list[tuple[str, str]]:
        from envtrain.train.sft import run_sft

        s = run_sft(cfg, printer=_printer)
        d = s.data
        return [
            ("records kept / total", f"{d.kept} / {d.records}"),
            ("excluded: over max_length / all turns masked / unrenderable", f"{d.overlength} / {d.untrainable} / {d.unrenderable}"),
            ("tokens (trained)", f"{d.tokens} ({d.trained_tokens})"),
            ("update steps", str(s.steps)),
            ("loss first / last logged", f"{_fmt(s.first_loss)} / {_fmt(s.last_loss)}"),
            ("train loss (mean)", _fmt(s.train_loss)),
            ("tokens per second", f"{s.tokens_per_second:.1f}"),
            ("seconds", f"{s.seconds:.1f}"),
            ("model (HF format)", s.output_dir),
        ]

    _run("sft", config, overrides or [], check, go)


def grpo_cmd(
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    overrides: list[str] | None = typer.Argument(None, help=OVERRIDES_HELP),
    check: bool = typer.Option(False, "--check", help="Validate the config, print it resolved, and exit."),
) -> None:
    """GRPO over environments with the verifier as the reward (binary pass, or native score)."""

    def go(cfg: Any) -> list[tuple[str, str]]:
        from envtrain.train.grpo import run_grpo

        s = run_grpo(cfg, printer=_printer)
        p = s.prompts
        return [
            ("environments (band + exploration)", f"{p.band + p.exploration} ({p.band} + {p.exploration}) of {p.environments}"),
            ("update steps", str(s.steps)),
            ("reward first / last step", f"{_fmt(s.reward_first)} / {_fmt(s.reward_last)}"),
            ("reward mean over steps", _fmt(s.reward_mean)),
            ("pass rate mean over steps", _fmt(s.pass_rate_mean)),
            ("seconds per step", f"{s.seconds_per_step:.2f}"),
            ("model (HF format)", s.output_dir),
        ]

    _run("grpo", config, overrides or [], check, go)


__all__ = ["grpo_cmd", "sft_cmd"]
