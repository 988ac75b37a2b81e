"""``envtrain compose``: build admitted environments from atoms (register with
``app.add_typer(compose_app, name="compose")`` in envtrain/cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

compose_app = typer.Typer(add_completion=False, help="Compose environments from atoms (LegoEnv): build, guard, admit.")


def _die(message: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print("error:", message, style="bold red", markup=False)
    raise typer.Exit(2)


@compose_app.callback(invoke_without_command=True)
def compose(
    n: int = typer.Option(..., "--n", min=1, help="How many environments to build (each index is admitted or rejected with a reason)."),
    seed: int = typer.Option(0, "--seed", help="Run seed; with --n it fixes every environment."),
    out: Path = typer.Option(Path("compose-out"), "--out", help="Output folder: envs/<id>.json, manifest.jsonl, report.json."),
    apps: Optional[list[str]] = typer.Option(None, "--apps", help="Only skeletons whose apps are all listed (repeat or comma-separate)."),
    datasets: Optional[list[str]] = typer.Option(None, "--datasets", help="Only these tables, package/item (repeat or comma-separate)."),
    workers: int = typer.Option(0, "--workers", min=0, help="Worker processes (0: one per CPU)."),
    cache: Optional[Path] = typer.Option(None, "--cache", help="Data-card cache folder (default: OUT/cache)."),
    atoms: Optional[Path] = typer.Option(None, "--atoms", help="A custom atom file (YAML/JSON: rules, intents, kinds, seeds)."),
    budget: int = typer.Option(400, "--budget", min=1, help="Tool calls admission condition (4) may try per environment."),
    evolve: bool = typer.Option(True, "--evolve/--no-evolve", help="Diagnose failures, file issues, repair atoms, rebuild what a repair reaches."),
    repairs: Optional[Path] = typer.Option(None, "--repairs", help="The repair store (default: OUT/repairs.json); share one across runs."),
    teacher: Optional[str] = typer.Option(None, "--teacher", help="Teacher policy: oracle, noop, hf:PATH, openai:URL, vllm:MODEL (oracle/noop are fixtures)."),
    attempts: int = typer.Option(8, "--attempts", min=1, help="Teacher episodes per admitted environment."),
    teacher_turns: int = typer.Option(50, "--teacher-turns", min=1, help="Assistant turns per teacher episode."),
    teacher_max_tokens: int = typer.Option(1024, "--teacher-max-tokens", min=1, help="Tokens per teacher turn."),
    teacher_concurrency: int = typer.Option(8, "--teacher-concurrency", min=1, help="Teacher episodes in flight at once."),
    builder: str = typer.Option("programmatic", "--builder", help="programmatic, or llm (an endpoint writes each request; needs --llm)."),
    llm: Optional[str] = typer.Option(None, "--llm", help="OpenAI-compatible base URL for --builder llm, e.g. http://host:8000/v1."),
    llm_model: Optional[str] = typer.Option(None, "--llm-model", help="Model name at --llm (default: the endpoint's first model)."),
    llm_budget: int = typer.Option(3, "--llm-budget", min=1, help="Answers the llm builder may give per environment."),
    diagnose_llm: Optional[str] = typer.Option(None, "--diagnose-llm", help="OpenAI-compatible base URL of the LLM diagnosis agent: it reads the unsolved environments the programmatic checks call hard (needs --teacher)."),
    diagnose_model: Optional[str] = typer.Option(None, "--diagnose-model", help="Model name at --diagnose-llm (default: --llm-model if the URLs agree, else the endpoint's first model)."),
    diagnose_budget: int = typer.Option(3, "--diagnose-budget", min=1, help="Answers the diagnosis agent may give per environment."),
) -> None:
    """Build N environments; resume a run by repeating the same command with the same --out."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from envtrain.core.errors import SpecError
    from envtrain.compose.pipeline import ComposeConfig, default_workers, run

    names = _split(apps)
    if builder not in ("programmatic", "llm"):
        _die(f"unknown builder {builder!r}: use programmatic or llm")
    if builder == "llm" and not llm:
        _die("--builder llm needs --llm URL (an OpenAI-compatible base URL, e.g. http://localhost:8000/v1)")
    try:
        config = ComposeConfig(n=n, seed=seed, out=out, apps=names, datasets=_split(datasets), workers=workers or default_workers(),
                               cache_dir=cache, atoms=atoms, search_budget=budget, evolve=evolve, repairs=repairs, teacher=teacher,
                               attempts=attempts, teacher_turns=teacher_turns, teacher_max_tokens=teacher_max_tokens,
                               teacher_concurrency=teacher_concurrency, builder=builder, llm=llm, llm_model=llm_model,
                               llm_budget=llm_budget, diagnose_llm=diagnose_llm, diagnose_model=diagnose_model,
                               diagnose_budget=diagnose_budget)
    except SpecError as exc:
        _die(str(exc))
    except ValueError as exc:
        _die(_first_error(exc))
    err = Console(stderr=True, highlight=False)
    with Progress(TextColumn("composing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=err, transient=False) as bar:
        task = bar.add_task("compose", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        try:
            report = run(config, progress=progress, log=lambda m: err.print(m, markup=False))
        except SpecError as exc:
            _die(str(exc))
    print_summary(report, Console(highlight=False, soft_wrap=True))


def _first_error(exc: ValueError) -> str:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError) and exc.errors():
        return str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
    return str(exc).splitlines()[0]


def _split(values: Optional[list[str]]) -> tuple[str, ...] | None:
    return tuple(v.strip() for item in (values or []) for v in item.split(",") if v.strip()) or None


def print_summary(report: dict[str, Any], console: Console) -> None:
    this = report["this_run"]
    console.print(f"indices {report['indices']}  built {report['built']}  admitted {report['admitted']}"
                  f"  admission rate {report['admission_rate']}  ({report['seconds']} s;"
                  f" this run {this['processed']} processed, {this['environments_per_second']} env/s,"
                  f" {this['admitted_per_second']} admitted/s)")
    sk = report["skeletons"]
    table = Table(title="skeletons: share satisfying each constraint")
    table.add_column("constraint")
    table.add_column("recombined candidates", justify="right")
    table.add_column("random skeletons (App. H)", justify="right")
    rec = sk["recombination"]
    for c in sk["constraints"]:
        table.add_row(c, f"{rec['tried'] - rec['violations'][c]}/{rec['tried']}", f"{sk['random']['satisfied'][c]:.1%}")
    table.add_row("all four", f"{rec['valid'] + rec['duplicates']}/{rec['tried']}",
                  f"{sk['random']['all four (one intent carries the rule)']:.1%}")
    console.print(table)
    console.print(f"skeleton pool: {sk['pool']} ({sk['seeds']} seeds, {rec['valid']} recombined)")
    for title, key in (("archetype", "archetypes"), ("app", "apps"), ("carrier", "carriers"), ("operation kind", "operation_kinds")):
        counts = report["counts"][key]
        t = Table(title=f"admitted by {title}")
        t.add_column(title)
        t.add_column("envs", justify="right")
        for name, value in counts.items():
            t.add_row(str(name), str(value))
        console.print(t)
    if "llm_builder" in report:
        llm = report["llm_builder"]
        console.print(f"llm builder ({llm['model'] or 'endpoint default'}): {llm['environments']} requests written in"
                      f" {llm['answers']} answers ({llm['accepted_first']} accepted first time); {llm['llm_rejections']}"
                      f" environments rejected after the budget; refused answers: {llm['refused_answers'] or 'none'}")
    if "teacher" in report:
        print_teacher(report["teacher"], console)
    evolution = report.get("evolution") or {}
    if evolution.get("issues") or evolution.get("repairs_in_store"):
        by_source = evolution.get("issues_by_source") or {}
        console.print(f"evolution: issues {evolution['issues']}"
                      + (f" (diagnosed by {', '.join(f'{k} {v}' for k, v in sorted(by_source.items()))})" if by_source else "")
                      + f"; repairs in store {evolution['repairs_in_store']}"
                      f" ({len(evolution['repairs_made'])} made this run); rebuilt {evolution['rebuilt']}"
                      f" ({evolution['rebuilt_admitted']} admitted)")
        for repair in evolution["repairs_made"]:
            console.print(f"  repair {repair['id']} of {repair['atom']}: {repair['fix']}")
    reasons = report["rejections"]["by_reason"]
    if reasons:
        t = Table(title="rejections")
        t.add_column("reason", overflow="fold")
        t.add_column("count", justify="right")
        for name, value in reasons.items():
            t.add_row(name, str(value))
        console.print(t)


def print_teacher(section: dict[str, Any], console: Console) -> None:
    fixture = " (a fixture: not a model result)" if section["fixture"] else ""
    t = Table(title=f"teacher {section['policy']}{fixture}: {section['attempts']} attempts per environment")
    t.add_column("")
    t.add_column("environments", justify="right")
    rows = [("yield (>= 1 accepted)", section["yield"]), ("pass rate", section["pass_rate"])]
    rows += [(f"band: {b}", n) for b, n in section["bands"].items()]
    diagnosis = section.get("diagnosis") or {}
    if diagnosis:
        rows += [(f"verdict: {v}", n) for v, n in diagnosis["by_verdict"].items()]
        rows += [(f"pathway: {p}", n) for p, n in diagnosis["by_pathway"].items()]
        rows += [(f"diagnosed by: {s}", n) for s, n in diagnosis["by_source"].items()]
    else:
        rows += [(f"diagnosis: {p}", n) for p, n in section.get("pathways", {}).items()]
    if "after_repairs" in section:
        rows.append(("yield after repairs", section["after_repairs"]["yield"]))
    for name, value in rows:
        t.add_row(name, "-" if value is None else str(value))
    console.print(t)
    llm = diagnosis.get("llm")
    if llm:
        console.print(f"diagnosis agent ({', '.join(llm['models']) or 'endpoint default'}): {llm['asked']} environments asked"
                      f" ({llm['replayed']} verdicts replayed), {llm['answers']} answers ({llm['accepted_first']} accepted first time);"
                      f" {llm['no_verdict']} left to the checks; refused answers: {llm['refused_answers'] or 'none'}")
