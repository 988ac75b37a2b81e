"""The ``envtrain`` command. Each verb exits non-zero with one clear sentence on bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from envtrain.core.errors import SpecError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Build, scale and train on executable tool-use environments.")
env_app = typer.Typer(no_args_is_help=True, help="Check, show or play one environment.")
app.add_typer(env_app, name="env")


def _register_builders() -> None:
    # Each builder keeps its command beside its code; they import only typer and rich at load time.
    from envtrain.bench.cli import export_cmd
    from envtrain.compose.cli import compose_app
    from envtrain.demo.cli import demo_cmd
    from envtrain.eval.cli import eval_cmd
    from envtrain.scale.cli import scale_app
    from envtrain.synth.cli import synth_cmd
    from envtrain.train.cli import grpo_cmd, sft_cmd

    app.command("demo")(demo_cmd)
    app.add_typer(compose_app, name="compose")
    app.command("eval")(eval_cmd)
    app.command("bench-export")(export_cmd)
    app.add_typer(scale_app, name="scale")
    app.command("synth")(synth_cmd)
    app.command("sft")(sft_cmd)
    app.command("grpo")(grpo_cmd)


_register_builders()

ENV_SUFFIXES = (".json", ".yaml", ".yml")


def _console() -> Console:
    # soft_wrap: long lines (JSON observations, reasons) stay whole, so they can be read and grepped.
    return Console(highlight=False, soft_wrap=True)


def _die(message: str, code: int = 2) -> NoReturn:
    Console(stderr=True, highlight=False, soft_wrap=True).print("error:", message, style="bold red", markup=False)
    raise typer.Exit(code)


def _env_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in ENV_SUFFIXES and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            _die(f"{path}: no such file or folder")
    if not files:
        _die(f"no environment files (*.json, *.yaml) under {', '.join(map(str, paths))}")
    return files


@env_app.command("check")
def env_check(
    paths: list[Path] = typer.Argument(..., help="Environment files, or folders to search for them."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON report per file instead of a table."),
    budget: int = typer.Option(400, help="Tool calls the condition (4) search may try per environment."),
) -> None:
    """Run the five-condition admission check; exit 0 when every environment is admitted."""
    from rich.progress import track

    from envtrain.core.admission import CONDITIONS, check_admission
    from envtrain.core.env import Environment

    files = _env_files(paths)
    reports, bad = [], []
    items = files if as_json or len(files) < 4 else track(files, description="checking", console=Console(stderr=True))
    for path in items:
        try:
            env = Environment.load(path)
            reports.append((path, check_admission(env, search_budget=budget)))
        except SpecError as exc:
            bad.append((path, str(exc)))
    if as_json:
        for path, report in reports:
            print(json.dumps({"file": str(path), **report.to_dict()}))
        for path, message in bad:
            print(json.dumps({"file": str(path), "admitted": False, "error": message}))
    else:
        console = _console()
        if reports:
            table = Table(title="admission", show_lines=False)
            table.add_column("environment", overflow="fold")
            table.add_column("id")
            for n in CONDITIONS:
                table.add_column(f"({n})", justify="center")
            table.add_column("ms", justify="right")
            for path, report in reports:
                marks = ["[green]ok[/]" if report.passed(n) else "[red]FAIL[/]" for n in CONDITIONS]
                table.add_row(str(path), report.env_id, *marks, f"{report.seconds * 1000:.1f}")
            console.print(table)
        for path, report in reports:
            for f in report.failures:
                where = f" {f.assertion}:" if f.assertion else ""
                console.print(f"{path} condition ({f.condition}) {CONDITIONS[f.condition]}:{where} {f.reason}", markup=False, style="red")
        for _, message in bad:
            console.print(message, markup=False, style="red")
        admitted = sum(r.admitted for _, r in reports)
        console.print(f"{admitted}/{len(files)} admitted")
    if bad and not reports:
        raise typer.Exit(2)
    if bad or not all(r.admitted for _, r in reports):
        raise typer.Exit(2 if bad else 1)


@env_app.command("show")
def env_show(path: Path = typer.Argument(..., help="An environment file.")) -> None:
    """Print a readable summary: request, persona, apps and tools, world size, verifier, solution."""
    from envtrain.core.env import Environment

    env = _load(path)
    console = _console()
    console.print(f"[bold]{escape(str(path))}[/]  id {env.id}  source {escape(env.provenance.source)}")
    console.print(f"[bold]request:[/] {escape(env.request)}")
    if env.persona:
        console.print("[bold]persona:[/] " + escape(", ".join(f"{k}={v}" for k, v in env.persona.items())))
    for doc in env.docs:
        console.print(f"[bold]doc[/] {escape(doc.title)}: {escape(doc.body)}")
    tools = Table(title="apps and tools")
    for col in ("app", "tool", "family", "preconditions"):
        tools.add_column(col)
    for a in env.apps:
        for t in a.tools:
            tools.add_row(a.name, t.name, t.family, str(len(t.preconditions)))
    console.print(tools)
    sizes = ", ".join(f"{name} {len(rows)}" for name, rows in env.world.tables.items())
    console.print(f"[bold]world:[/] base time {env.world.base_time}; rows: {sizes or 'none'}; files {len(env.world.files)}")
    ver = Table(title="verifier")
    ver.add_column("")
    ver.add_column("name")
    ver.add_column("condition")
    for polarity, group in (("+", env.verifier.positive), ("-", env.verifier.negative)):
        for a in group:
            ver.add_row(polarity, escape(a.name), escape(a.describe()))
    for check in env.verifier.checks:  # V+ that no condition can say: a script the handler runs over the workspace
        first = check.script.strip().splitlines()[0] if check.script.strip() else ""
        ver.add_row("+", escape(check.name), escape(f"checker script via {check.handler}: {first[:60]}"))
    console.print(ver)
    console.print("[bold]reference solution:[/]")
    for i, call in enumerate(env.reference_solution):
        console.print(f"  {i}. {call.tool}({json.dumps(call.arguments, ensure_ascii=False)})", markup=False)


def _load(path: Path):
    from envtrain.core.env import Environment

    if not path.is_file():
        _die(f"{path}: no such file")
    try:
        return Environment.load(path)
    except SpecError as exc:
        _die(str(exc))


@env_app.command("export")
def env_export(
    folder: Path = typer.Argument(..., help="A folder of environment documents (composed, scaled, synthesized)."),
    out: Path = typer.Option(..., help="Where the Hugging Face dataset goes (load with datasets.load_from_disk)."),
    push_to_hub: Optional[str] = typer.Option(None, help="Also push the dataset to this Hub repo."),
) -> None:
    """Export environment documents as a Hugging Face dataset, one canonical document per row."""
    from envtrain.core.collection import export_environments

    if not folder.is_dir():
        _die(f"{folder}: no such folder")
    _quiet_datasets()
    try:
        data = export_environments(folder, out)
    except SpecError as exc:
        _die(str(exc))
    if len(data) == 0:
        _die(f"no environment documents under {folder}", code=1)
    if push_to_hub:
        data.push_to_hub(push_to_hub)
    _console().print(f"{len(data)} environments -> {out}", markup=False)


PLAY_HELP = """commands:
  tools                      list the tools
  <tool> {json arguments}    call a tool, e.g. get_ticket {"ticket_id": 1}
  verify                     check the verifier on the current world
  reset                      start over from W0
  docs                       show the request, persona and documents
  quit                       leave"""


@env_app.command("play")
def env_play(path: Path = typer.Argument(..., help="An environment file.")) -> None:
    """Act as the agent in a terminal: call tools with JSON arguments, then verify."""
    from envtrain.core.session import Runtime

    env = _load(path)
    console = _console()
    try:
        runtime = Runtime(env)
    except SpecError as exc:
        _die(str(exc))
    with runtime.session() as session:
        obs = session.reset()
        console.print(f"[bold]request:[/] {escape(obs.request)}\n{escape(PLAY_HELP)}")
        while True:
            try:
                line = input("envtrain> ").strip()
            except EOFError:
                break
            if not line:
                continue
            name, _, rest = line.partition(" ")
            if name in ("quit", "exit"):
                break
            if name == "help":
                console.print(PLAY_HELP, markup=False)
            elif name == "tools":
                for t in obs.tools:
                    fn = t["function"]
                    params = ", ".join(fn["parameters"].get("properties", {}))
                    console.print(f"  [bold]{fn['name']}[/]({escape(params)}): {escape(fn['description'])}")
            elif name == "docs":
                console.print(f"request: {obs.request}\npersona: {obs.persona}", markup=False)
                for doc in obs.docs:
                    console.print(f"[bold]{escape(doc['title'])}[/]: {escape(doc['body'])}")
            elif name == "reset":
                obs = session.reset()
                console.print("world reset to W0")
            elif name == "verify":
                result = session.verify()
                for a in result.assertions:
                    console.print(f"  {'[green]holds[/]' if a.holds else '[red]fails[/]'} V{a.polarity} {escape(a.name)}")
                console.print(f"score {result.score:.2f}  passed {result.passed}")
            else:
                step = session.step({"tool": name, "arguments": rest.strip() or "{}"})
                console.print(str(step.status), style="green" if step.ok else "red", end=" ")
                console.print(step.content(), markup=False)


@app.command("collect")
def collect_cmd(
    envs: Path = typer.Option(..., help="A folder of environment documents (searched recursively), or one file."),
    policy: str = typer.Option(..., help="oracle | noop | hf:PATH | openai:URL[,URL...] | vllm:MODEL"),
    out: Path = typer.Option(..., help="Output folder: the dataset, its shards and summary.json. A rerun resumes."),
    attempts: int = typer.Option(1, min=1, help="Episodes per environment."),
    keep_per_env: int = typer.Option(3, min=1, help="At most this many kept trajectories per environment."),
    min_score: Optional[float] = typer.Option(None, min=0.0, max=1.0, help="Also keep failed episodes with this native score."),
    shard: str = typer.Option("0/1", help="I/N: run the environments whose id falls in part I of N."),
    concurrency: int = typer.Option(8, min=1, help="Episodes at once."),
    temperature: float = typer.Option(0.7, min=0.0),
    max_tokens: int = typer.Option(1024, min=1, help="Tokens per assistant turn."),
    max_turns: int = typer.Option(50, min=1),
    max_seconds: float = typer.Option(600.0, min=1.0, help="Wall time per episode."),
    seed: Optional[int] = typer.Option(None),
    retries: int = typer.Option(5, min=0, help="openai: retries per request on connection errors, 429 and 5xx."),
    request_timeout: float = typer.Option(120.0, min=0.1, help="openai: seconds per HTTP request."),
    push_to_hub: Optional[str] = typer.Option(None, help="Push the kept dataset to this Hub repo when done."),
) -> None:
    """Collect verifier-filtered trajectories from a policy over environments."""
    import asyncio

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from envtrain.agent.registry import make_policy
    from envtrain.agent.types import SamplingParams
    from envtrain.rollout.collect import CollectConfig, collect, push_to_hub as push, summary_table
    from envtrain.rollout.episode import RolloutLimits
    from envtrain.rollout.store import StoreError

    try:
        index, count = (int(x) for x in shard.split("/"))
        if not 0 <= index < count:
            raise ValueError
    except ValueError:
        _die(f"--shard takes I/N with 0 <= I < N, got {shard!r}")
    if not envs.exists():
        _die(f"{envs}: no such file or folder")
    cfg = CollectConfig(
        envs=envs, out=out, attempts=attempts, keep_per_env=keep_per_env, min_score=min_score, shard=(index, count),
        concurrency=concurrency, sampling=SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=seed),
        limits=RolloutLimits(max_turns=max_turns, max_seconds=max_seconds),
    )
    options = {"max_retries": retries, "timeout": request_timeout, "concurrency": concurrency} if policy.startswith("openai:") else {}
    try:
        agent = make_policy(policy, **options)
    except (ValueError, OSError) as exc:
        _die(str(exc))
    _quiet_datasets()
    console = _console()
    if policy == "oracle":
        console.print("[yellow]policy oracle replays each reference solution: a fixture, not a model result[/]")
    passed = [0, 0]
    with Progress(TextColumn("collect"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                  TimeRemainingColumn(), console=Console(stderr=True)) as bar:
        task = bar.add_task("collect", total=None, rate="")

        def started(total: int) -> None:
            bar.update(task, total=total)

        def episode(traj) -> None:
            passed[0] += traj.passed
            passed[1] += 1
            bar.update(task, advance=1, rate=f"pass {passed[0] / passed[1]:.2f}")

        async def run():
            try:
                return await collect(cfg, agent, on_episode=episode, on_start=started)
            finally:
                await agent.aclose()

        try:
            summary = asyncio.run(run())
        except StoreError as exc:
            _die(f"{exc}; what was written is kept: rerun the same command to resume", code=1)
        except SpecError as exc:
            _die(str(exc))
    table = Table(title=f"collect: {policy}" + (" (oracle fixture)" if policy == "oracle" else ""))
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in summary_table(summary):
        table.add_row(name, escape(value))
    console.print(table)
    for path, why in summary.failed_environments.items():
        console.print(f"not loaded: {path}: {why}", markup=False, style="red")
    console.print(f"dataset: {out} ({summary.kept} kept of {summary.attempts}); load with datasets.load_from_disk", markup=False)
    if push_to_hub:
        push(out, push_to_hub)


@app.command("merge")
def merge_cmd(
    dirs: list[Path] = typer.Argument(..., help="Collection outputs to concatenate (e.g. the N shards of one run)."),
    out: Path = typer.Option(..., help="Where the merged dataset goes."),
) -> None:
    """Concatenate collection datasets; refuses if any (environment, attempt) appears twice."""
    from envtrain.rollout.store import StoreError, merge

    for d in dirs:
        if not (d / "state.json").exists():
            _die(f"{d}: not a collection output (no dataset there)")
    _quiet_datasets()
    try:
        merged = merge(dirs, out)
    except StoreError as exc:
        _die(str(exc), code=1)
    _console().print(f"{len(merged)} trajectories from {len(dirs)} datasets -> {out}", markup=False)


def _quiet_datasets() -> None:
    # The datasets library draws a bar per shard it saves; the command draws its own.
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()


def main(argv: Optional[list[str]] = None) -> None:
    app(args=argv)


if __name__ == "__main__":
    main(sys.argv[1:])
