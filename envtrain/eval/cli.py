"""``envtrain eval``: a policy on a benchmark, or a paired report of two runs.

    envtrain eval --policy oracle --benchmark bfcl-multi-turn --out runs/bfcl-gold
    envtrain eval --policy openai:http://127.0.0.1:8000/v1 --benchmark reasoning-gym:leg_counting:0-3 --out runs/rg
    envtrain eval --policy hf:PATH --benchmark envs:scaled/ --attempts 4 --temperature 0.7 --out runs/scaled
    envtrain eval --compare runs/original runs/scaled --out runs/paired

Registered by ``envtrain.cli`` (``app.command("eval")(eval_cmd)``); this module imports only typer
and rich at load, everything else when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn, Optional, Tuple

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

POLICY_HELP = "oracle (the benchmark's gold replay: a fixture, not a model) | noop | hf:PATH | openai:URL[,URL...] | vllm:MODEL"


def _die(message: str, code: int = 2) -> NoReturn:
    Console(stderr=True, highlight=False, soft_wrap=True).print("error:", message, style="bold red", markup=False)
    raise typer.Exit(code)


def eval_cmd(
    policy: Optional[str] = typer.Option(None, help=POLICY_HELP),
    benchmark: Optional[str] = typer.Option(
        None, help="bfcl-multi-turn[:CATEGORY[,CATEGORY]] (base, miss_func, miss_param, long_context) | "
                   "reasoning-gym:NAME[,NAME...][:LEVELS] (LEVELS: 2, 0-3 or 0,2) | envs:DIR"),
    out: Path = typer.Option(
        ..., help="Output folder: metrics.json, results.jsonl, episodes.jsonl, report.md, plots/. An interrupted run resumes "
                  "(OUT/journal.jsonl holds its finished episodes)."),
    attempts: int = typer.Option(1, min=1, help="Episodes per task (pass@k for k up to this)."),
    max_turns: Optional[int] = typer.Option(
        None, min=1, help="Assistant turns per episode. Default: 50 for environments; BFCL follows its own protocol "
                          "(20 steps per user turn, no episode cap); reasoning-gym 4."),
    limit: Optional[int] = typer.Option(None, min=1, help="At most N tasks (per BFCL category; per reasoning-gym level, default 20)."),
    seed: int = typer.Option(0, help="reasoning-gym dataset seed."),
    concurrency: int = typer.Option(8, min=1, help="Episodes at once."),
    temperature: float = typer.Option(0.0, min=0.0, help="0 is greedy; raise it when --attempts > 1."),
    max_tokens: int = typer.Option(1024, min=1, help="Tokens per assistant turn."),
    max_seconds: float = typer.Option(600.0, min=1.0, help="Wall time per episode."),
    threshold: float = typer.Option(0.8, min=0.0, max=1.0, help="Native score that counts as a pass in the threshold metric."),
    compare: Optional[Tuple[Path, Path]] = typer.Option(None, help="RUN_A RUN_B: a paired report of two written runs instead."),
    measure: str = typer.Option("mean_score", help="--compare: mean_score, pass_at_1 or threshold_pass per task."),
    no_trajectories: bool = typer.Option(False, help="Do not write trajectories.jsonl."),
    retries: int = typer.Option(5, min=0, help="openai: retries per request on connection errors, 429 and 5xx."),
    request_timeout: float = typer.Option(120.0, min=0.1, help="openai: seconds per HTTP request."),
) -> None:
    """Evaluate a policy on BFCL multi-turn, reasoning-gym or environment folders, or compare two runs task by task."""
    if compare is not None:
        _compare(compare, out, measure)
        return
    if not policy or not benchmark:
        _die("give --policy and --benchmark to evaluate, or --compare RUN_A RUN_B for a paired report")
    _evaluate(policy, benchmark, out, attempts=attempts, max_turns=max_turns, limit=limit, seed=seed, concurrency=concurrency,
              temperature=temperature, max_tokens=max_tokens, max_seconds=max_seconds, threshold=threshold,
              save=not no_trajectories, retries=retries, request_timeout=request_timeout)


def _compare(runs: Tuple[Path, Path], out: Path, measure: str) -> None:
    from envtrain.eval.report import write_compare

    if measure not in ("mean_score", "pass_at_1", "threshold_pass"):
        _die(f"--measure is mean_score, pass_at_1 or threshold_pass, got {measure!r}")
    try:
        result = write_compare(out, runs[0], runs[1], measure=measure)
    except FileNotFoundError as exc:
        _die(str(exc))
    console = Console(highlight=False, soft_wrap=True)
    table = Table(title="paired comparison")
    for col in ("pairs", "wins", "losses", "ties", "p (sign test)", "mean A", "mean B"):
        table.add_column(col, justify="right")
    table.add_row(str(result.n_pairs), str(result.wins), str(result.losses), str(result.ties), f"{result.p_value:.4g}",
                  f"{result.mean_a:.4f}", f"{result.mean_b:.4f}")
    console.print(table)
    console.print(result.sentence(), markup=False)
    if result.n_pairs == 0:
        console.print("no task of one run has a partner in the other (neither task ids nor lineage roots match)", style="yellow")
    console.print(f"report: {out / 'compare.md'}", markup=False)


def _evaluate(policy_spec: str, benchmark: str, out: Path, *, attempts: int, max_turns: int | None, limit: int | None, seed: int,
              concurrency: int, temperature: float, max_tokens: int, max_seconds: float, threshold: float, save: bool,
              retries: int, request_timeout: float) -> None:
    import asyncio

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from envtrain.agent.registry import make_policy
    from envtrain.agent.types import SamplingParams
    from envtrain.bench.registry import make_adapter
    from envtrain.bench.types import EpisodeLimits
    from envtrain.eval.journal import JOURNAL
    from envtrain.eval.report import write_run
    from envtrain.eval.run import EvalConfig, evaluate

    try:
        adapter = make_adapter(benchmark, limit=limit, seed=seed)
    except (ValueError, ImportError) as exc:
        _die(str(exc) if isinstance(exc, ValueError) else f"benchmark {benchmark!r} needs a package that is not installed: {exc}")
    fixture = policy_spec.strip() == "oracle"
    try:
        if fixture:
            agent = adapter.fixture_policy()
        else:
            options = {"max_retries": retries, "timeout": request_timeout, "concurrency": concurrency} if policy_spec.startswith("openai:") else {}
            agent = make_policy(policy_spec, **options)
    except (ValueError, OSError) as exc:
        _die(str(exc))
    cfg = EvalConfig(benchmark=benchmark, policy=policy_spec, out=out, attempts=attempts, limit=limit, seed=seed,
                     concurrency=concurrency, threshold=threshold,
                     sampling=SamplingParams(temperature=temperature, max_tokens=max_tokens),
                     limits=EpisodeLimits(max_turns=max_turns, max_seconds=max_seconds), save_trajectories=save)
    console = Console(highlight=False, soft_wrap=True)
    if fixture:
        console.print("[yellow]policy oracle replays the benchmark's gold answers: a fixture that checks the wiring, not a model result[/]")
    if attempts > 1 and temperature == 0:
        console.print("[yellow]--attempts > 1 at temperature 0: greedy attempts repeat each other; pass@k then equals pass@1[/]")
    passed = [0, 0]
    with Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                  TimeRemainingColumn(), console=Console(stderr=True)) as bar:
        task = bar.add_task("eval", total=None, rate="")

        def started(total: int) -> None:
            bar.update(task, total=total)

        def resumed(n: int) -> None:
            console.print(f"resuming: {n} episodes of an interrupted run are in {out / JOURNAL}; running the rest",
                          markup=False, style="yellow")

        def episode(row) -> None:
            passed[0] += row.passed
            passed[1] += 1
            bar.update(task, advance=1, rate=f"pass {passed[0] / passed[1]:.2f}")

        async def run():
            try:
                return await evaluate(adapter, agent, cfg, fixture=fixture, journal=True, on_start=started, on_episode=episode,
                                      on_resume=resumed)
            finally:
                await agent.aclose()

        try:
            rows, trajectories = asyncio.run(run())
        except (ValueError, OSError) as exc:  # a missing folder, an unreadable file: before any episode ran
            _die(str(exc))
        except KeyboardInterrupt:
            _die(f"interrupted after {passed[1]} episodes; they are kept in {out / JOURNAL}: "
                 "rerun the same command to finish the run", code=130)
    not_loaded = dict(getattr(adapter, "failed", {}) or {})
    if not rows:
        _die(f"{benchmark}: no tasks to evaluate" + (f" ({len(not_loaded)} files did not load)" if not_loaded else ""))
    metrics = write_run(out, rows, trajectories if save else None, benchmark=adapter.name, policy=agent.name, fixture=fixture,
                        threshold=threshold, not_loaded=not_loaded)
    table = Table(title=f"eval: {agent.name}" + (" (gold replay fixture)" if fixture else "") + f" on {adapter.name}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in summary_rows(metrics):
        table.add_row(name, escape(value))
    console.print(table)
    for path, why in not_loaded.items():
        console.print(f"not loaded: {path}: {why}", markup=False, style="red")
    console.print(f"report: {out / 'report.md'}  ({metrics.n_tasks} tasks, {metrics.n_episodes} episodes)", markup=False)


def summary_rows(m) -> list[tuple[str, str]]:
    rows = [("tasks", str(m.n_tasks)), ("episodes", str(m.n_episodes)),
            ("pass@1", f"{m.pass_at_1:.4f} ({round(m.pass_at_1 * m.n_tasks)}/{m.n_tasks})" if m.attempts == 1 else f"{m.pass_at_1:.4f}")]
    rows += [(f"pass@{k}", f"{v:.4f}") for k, v in m.pass_at_k.items() if k != "1"]
    rows += [(f"pass (score >= {m.threshold:g})", f"{m.threshold_pass:.4f}"), ("mean native score", f"{m.mean_score:.4f}"),
             ("pooled rubric pass rate", f"{m.pooled_rubric_pass_rate:.4f}"),
             ("mean turns / tool calls", f"{m.mean_turns:.2f} / {m.mean_tool_calls:.2f}"),
             ("mean tokens (prompt / completion)", f"{m.mean_prompt_tokens:.0f} / {m.mean_completion_tokens:.0f}"),
             ("stop reasons", ", ".join(f"{k} {v}" for k, v in sorted(m.stop_reasons.items()))),
             ("grading ms per episode (p50)", "in the episode" if m.grade_ms_p50 is None else f"{m.grade_ms_p50:.3f}")]
    if len(m.by_group) > 1:
        rows += [(f"  {name}", f"pass {g.pass_at_1:.4f}, score {g.mean_score:.4f} (n={g.n_tasks})") for name, g in m.by_group.items()]
    return rows
