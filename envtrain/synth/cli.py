"""``envtrain synth``: EnvCraft environments, admitted and inspected (registered in envtrain/cli.py
with ``app.command("synth")(synth_cmd)``).

    envtrain synth --n 50 --out synth-out                                  # no model: templates + app chains
    envtrain synth --scenarios builtin --list                              # the EnvCraft scenario catalogue
    envtrain synth --llm http://127.0.0.1:8000/v1 --llm-model M --select claw --n 10 --out synth-llm
"""

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
    sandbox: str = typer.Option("bwrap", "--sandbox", help="Sandbox for shell commands and generated code: bwrap, docker or local (local: NO isolation)."),
    scenarios: str = typer.Option("builtin", "--scenarios", help="builtin: the EnvCraft catalogue with --llm, templates + built-in app "
                                  "tool chains without; templates: always those; FILE: your own scenario cards (needs --llm)."),
    select: str | None = typer.Option(None, "--select", help="Scenario cards to use: keys (claw-12), domains (general, claw), words of names; comma-separated."),
    list_: bool = typer.Option(False, "--list", help="Print the scenario cards (after --select) and exit."),
    seed: int = typer.Option(0, "--seed", help="Run seed; fixes every environment of the programmatic path."),
    workspace_share: float = typer.Option(0.5, "--workspace-share", min=0.0, max=1.0, help="Share of workspace scenarios; the rest are app chains."),
    budget: int = typer.Option(120, "--budget", min=1, help="Tool calls admission condition (4) may try per environment."),
    llm: str | None = typer.Option(None, "--llm", help="OpenAI-compatible endpoint (…/v1): synthesizes apps from scenario cards and scores the Table 18 rubric."),
    llm_model: str = typer.Option("default", "--llm-model", help="Model name sent to --llm."),
    revisions: int = typer.Option(3, "--revisions", min=0, help="Revisions the engine asks for after a rejected answer."),
) -> None:
    """Synthesize environments (EnvCraft); every one kept passes admission and the inspector."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from envtrain.core.errors import SpecError
    from envtrain.sandbox import BACKENDS
    from envtrain.synth.catalogue import load_catalogue
    from envtrain.synth.catalogue import select as select_cards
    from envtrain.synth.pipeline import SynthConfig, run

    if scenarios not in ("builtin", "templates") and not Path(scenarios).is_file():
        _die(f"--scenarios {scenarios!r}: use builtin, templates or a scenario file that exists")
    if list_ or select is not None or scenarios not in ("builtin", "templates"):
        try:
            cards = select_cards(load_catalogue() if scenarios in ("builtin", "templates") else load_catalogue(scenarios), select)
        except SpecError as exc:
            _die(str(exc))
        if list_:
            _print_cards(cards)
            return
    if llm is None and (select is not None or scenarios not in ("builtin", "templates")):
        _die("scenario cards are synthesized by a model: give --llm URL (without one, synth builds from templates and app chains)")
    if sandbox not in BACKENDS:
        _die(f"--sandbox {sandbox!r}: choose one of {', '.join(BACKENDS)}")
    config = SynthConfig(n=n, out=out, sandbox=sandbox, seed=seed, workspace_share=workspace_share, search_budget=budget,
                         scenarios=scenarios, select=select, llm=llm, llm_model=llm_model, revisions=revisions)
    err = Console(stderr=True, highlight=False)
    with Progress(TextColumn("synthesizing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err) as bar:
        task = bar.add_task("synth", total=n)
        try:
            report = run(config, progress=lambda done, total: bar.update(task, completed=done, total=total))
        except SpecError as exc:
            _die(str(exc))
    table = Table(title=f"envtrain synth → {out}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows: list[tuple[str, object]] = [("indices", n), ("draws", report.draws), ("built", report.built), ("admitted", report.admitted),
                                      ("kept", report.kept), *((f"kept: {k}", v) for k, v in sorted(report.by_kind.items()))]
    if report.rubric:
        for dim in ("solvability", "validation", "consistency"):
            scores = [r[dim] for r in report.rubric if r[dim] is not None]
            rows.append((f"rubric {dim} (mean of {len(scores)})", f"{sum(scores) / len(scores):.2f}" if scores else "-"))
    if report.llm_cost:
        rows += [("llm calls", int(report.llm_cost.get("calls", 0))), ("llm tokens", int(report.llm_cost.get("tokens", 0)))]
    rows += [*((f"rejected: {k}", v) for k, v in report.rejections.most_common(8)), ("seconds", f"{report.seconds:.1f}")]
    for key, value in rows:
        table.add_row(str(key), str(value))
    Console(highlight=False).print(table)
    if report.kept == 0:
        raise typer.Exit(1)


def _print_cards(cards: tuple) -> None:
    table = Table(title=f"EnvCraft scenario catalogue ({len(cards)} cards)")
    for column in ("key", "table", "name", "envs", "id"):
        table.add_column(column)
    for card in cards:
        table.add_row(card.key, str(card.table or "-"), card.name, str(card.envs), card.id)
    Console(highlight=False).print(table)
