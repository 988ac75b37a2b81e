"""``envtrain demo``: the main job, end to end, on the embedded CPU default or a ``--config`` recipe.

    envtrain demo                                   # CPU, tiny model, oracle teacher (a labelled fixture), no keys
    envtrain demo --config configs/demo/gpu.yaml    # real size: vLLM/API teacher, Qwen-class model, ZeRO-3
    envtrain demo sft.max_steps=80 --out demo-long  # any key of the config, dotted
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn, Optional

import typer


def _die(message: str, code: int = 2) -> NoReturn:
    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True).print("error:", message, style="bold red", markup=False)
    raise typer.Exit(code)


def demo_cmd(
    overrides: Optional[list[str]] = typer.Argument(None, help="KEY=VALUE overrides of the config: compose.n=400 sft.max_steps=80"),
    config: Optional[Path] = typer.Option(None, "--config", help="A demo config YAML (configs/demo/); default: the embedded CPU config."),
    out: Path = typer.Option(Path("demo-out"), "--out", help="Output folder: report.md, plots/, and every stage's outputs."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete OUT first instead of resuming the run in it."),
    until: Optional[str] = typer.Option(None, "--until", help="Stop after this stage (compose, scale, split, collect, model, sft, grpo, eval)."),
    show_config: bool = typer.Option(False, "--show-config", help="Print the resolved config as YAML and exit."),
) -> None:
    """Compose → scale → split → collect → SFT → GRPO → eval → report; a rerun resumes where it stopped."""
    from envtrain.demo.config import load_demo_config
    from envtrain.train.config import ConfigError

    if config is not None and not config.is_file():
        _die(f"{config}: no such config file")
    try:
        cfg = load_demo_config(config, overrides or [])
    except ConfigError as exc:
        _die(str(exc))
    if show_config:
        import yaml

        print(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False), end="")
        return
    from envtrain.demo.pipeline import STAGES, ConfigMismatch, run_demo

    if until is not None and until not in {name for name, _, _ in STAGES}:
        _die(f"--until {until!r} is not a stage ({', '.join(name for name, _, _ in STAGES)})")
    _quiet_libraries()
    from envtrain.demo.display import RichDisplay

    try:
        records = run_demo(cfg, out, RichDisplay(len(STAGES) + 1), fresh=fresh, until=until)
    except ConfigMismatch as exc:
        _die(str(exc))
    if until is None:
        _print_summary(out, records)


def _quiet_libraries() -> None:
    # datasets draws a bar per shard and transformers warns per generate call; the stage bars say enough.
    from datasets.utils.logging import disable_progress_bar
    from transformers.utils import logging as hf_logging

    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\.")  # deprecations inside TRL's calls
    disable_progress_bar()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    import torch

    if not torch.cuda.is_available():  # DeepSpeed (imported by TRL) otherwise prints its accelerator guess to stdout
        os.environ.setdefault("DS_ACCELERATOR", "cpu")


def _print_summary(out: Path, records: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    from envtrain.demo.report import summary_rows

    def pct(x) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    def num(x) -> str:
        return "-" if x is None else f"{x:.3f}"

    console = Console(highlight=False, soft_wrap=True)
    table = Table(title="envtrain demo: checkpoints on held-out environments and BFCL (pass@1 / native score)")
    for column in ("checkpoint", "held-out original", "held-out scaled", "BFCL multi-turn"):
        table.add_column(column, justify="left" if column == "checkpoint" else "right")
    for r in summary_rows(out):
        table.add_row(r["checkpoint"], f"{pct(r.get('original_pass'))} / {num(r.get('original_score'))}",
                      f"{pct(r.get('scaled_pass'))} / {num(r.get('scaled_score'))}", f"{pct(r.get('bfcl_pass'))} / {num(r.get('bfcl_score'))}")
    console.print(table)
    teacher = records.get("collect", {}).get("summary", {}).get("teacher", "?")
    console.print(f"teacher: {teacher}", markup=False)
    total = sum(r["seconds"] for r in records.values())
    console.print(f"stages took {total:.0f} s in all (this run and any it resumed); report: {out / 'report.md'}", markup=False)
