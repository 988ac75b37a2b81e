"""``envtrain synth``: workspace and app-chain environments without a model (register with
``app.command("synth")(synth_cmd)`` in envtrain/cli.py)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table


def _die(message: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print("error:", message, style="bold red", markup=False)
    raise typer.Exit(2)


def synth_cmd(
    n: int = typer.Option(10, "--n", min=1, help="How many environments to keep (each index is admitted or reported rejected)."),
    out: Path = typer.Option(Path("synth-out"), "--out", help="Output folder: envs/<id>.json, manifest.jsonl, report.json."),
    sandbox: str = typer.Option("bwrap", "--sandbox", help="Sandbox for shell commands: bwrap, docker or local (local: NO isolation)."),
    scenarios: str = typer.Option("builtin", "--scenarios", help="builtin (templates + built-in app tool chains); a scenario FILE needs --llm."),
    seed: int = typer.Option(0, "--seed", help="Run seed; fixes every environment."),
    workspace_share: float = typer.Option(0.5, "--workspace-share", min=0.0, max=1.0, help="Share of workspace scenarios; the rest are app chains."),
    budget: int = typer.Option(120, "--budget", min=1, help="Tool calls admission condition (4) may try per environment."),
    llm: str | None = typer.Option(None, "--llm", help="OpenAI-compatible endpoint for the synthesis engine (not in this build)."),
) -> None:
    """Synthesize environments (EnvCraft) programmatically; every one passes admission."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from envtrain.core.errors import SpecError
    from envtrain.sandbox import BACKENDS
    from envtrain.synth.pipeline import SynthConfig, run

    if llm is not None:
        _die("the LLM synthesis engine is not part of this build yet; run without --llm")
    if scenarios != "builtin":
        _die(f"--scenarios {scenarios!r}: scenario files need the LLM engine; use --scenarios builtin")
    if sandbox not in BACKENDS:
        _die(f"--sandbox {sandbox!r}: choose one of {', '.join(BACKENDS)}")
    err = Console(stderr=True, highlight=False)
    with Progress(TextColumn("synthesizing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err) as bar:
        task = bar.add_task("synth", total=n)
        try:
            report = run(SynthConfig(n=n, out=out, sandbox=sandbox, seed=seed, workspace_share=workspace_share, search_budget=budget),
                         progress=lambda done, total: bar.update(task, completed=done, total=total))
        except SpecError as exc:
            _die(str(exc))
    table = Table(title=f"envtrain synth → {out}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in (("indices", n), ("draws", report.draws), ("built", report.built), ("admitted", report.admitted),
                       ("kept", report.kept), *((f"kept: {k}", v) for k, v in sorted(report.by_kind.items())),
                       *((f"rejected: {k}", v) for k, v in report.rejections.most_common(8)), ("seconds", f"{report.seconds:.1f}")):
        table.add_row(str(key), str(value))
    Console(highlight=False).print(table)
    if report.kept == 0:
        raise typer.Exit(1)
