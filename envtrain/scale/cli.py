"""``envtrain scale``: recursive environment scaling from the command line.

    envtrain scale --envs examples/ --depth 5 --proposer programmatic --seed 0 --out runs/res
    envtrain scale --envs examples/ --depth 5 --out runs/res-basic --ablation basic
    envtrain scale --envs examples/ --depth 6 --out runs/res-eval --evaluate-policy openai:http://127.0.0.1:8000/v1 --evaluate-every 2
    envtrain scale validate PARENT.json CHILD.json PLAN.json

Registered in ``envtrain/cli.py`` with ``app.add_typer(scale_app, name="scale")``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn, Optional

import typer
from rich.console import Console
from rich.table import Table

ENV_SUFFIXES = (".json", ".yaml", ".yml")


def _die(message: str, code: int = 2) -> NoReturn:
    Console(stderr=True, highlight=False, soft_wrap=True).print("error:", message, style="bold red", markup=False)
    raise typer.Exit(code)


def _roots(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        _die(f"{path}: no such file or folder")
    files = sorted(p for p in path.rglob("*") if p.suffix in ENV_SUFFIXES and p.is_file())
    if not files:
        _die(f"no environment files (*.json, *.yaml) under {path}")
    return files


def scale_cmd(
    ctx: typer.Context,
    envs: Optional[Path] = typer.Option(None, help="A folder of root environments (searched recursively), or one file."),
    out: Optional[Path] = typer.Option(
        None,
        help="Output folder: lineages/<root id>/<depth>.json with plans and validation records, report.json. A rerun resumes.",
    ),
    depth: int = typer.Option(10, min=1, max=50, help="Depth cap: accepted children per lineage."),
    proposer: str = typer.Option("programmatic", help="programmatic | llm"),
    seed: int = typer.Option(0, help="Seed of the programmatic search."),
    ablation: str = typer.Option("none", help="none | no-deps | no-inheritance | basic"),
    budget: int = typer.Option(8, min=1, help="Outer proposer executions per parent (proposals and repairs)."),
    max_steps: int = typer.Option(4, min=1, max=8, help="Operators per plan."),
    lookahead: int = typer.Option(4, min=1, help="Programmatic: plans built per proposal; the hardest valid one is proposed."),
    workers: int = typer.Option(1, min=1, help="Lineages scaled at once (processes)."),
    llm_url: Optional[str] = typer.Option(None, help="llm proposer: OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1"),
    llm_model: Optional[str] = typer.Option(None, help="llm proposer: model name."),
    evaluate_policy: Optional[str] = typer.Option(
        None, help="Target evaluation at selected depths with this policy: oracle, noop, hf:PATH, openai:URL, vllm:MODEL."
    ),
    evaluate_at: Optional[str] = typer.Option(None, help="Target evaluation: depths to evaluate, e.g. 0,3,5 (0 is the root)."),
    evaluate_every: Optional[int] = typer.Option(None, min=1, help="Target evaluation: every K-th depth (K, 2K, ...)."),
    evaluate_attempts: int = typer.Option(3, min=3, help="Target evaluation: attempts per evaluated node."),
    evaluate_max_turns: int = typer.Option(60, min=1, help="Target evaluation: assistant turns per attempt."),
) -> None:
    """Make environments harder, round after round, keeping request, facts and verifier fixed (RES)."""
    if ctx.invoked_subcommand is not None:
        return
    from pydantic import ValidationError
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from envtrain.scale.lineage import ScaleConfig, scale_all

    if envs is None or out is None:
        _die("scale needs --envs DIR and --out DIR (or the subcommand: scale validate PARENT CHILD PLAN)")
    try:
        at = tuple(int(d) for d in evaluate_at.split(",") if d.strip()) if evaluate_at else ()
    except ValueError:
        _die(f"--evaluate-at: a comma-separated list of depths, got {evaluate_at!r}")
    try:
        config = ScaleConfig(
            depth=depth,
            proposer=proposer,
            seed=seed,
            ablation=ablation,
            budget=budget,
            max_steps=max_steps,
            lookahead=lookahead,
            llm_url=llm_url,
            llm_model=llm_model,
            evaluate_policy=evaluate_policy,
            evaluate_at=at,
            evaluate_every=evaluate_every,
            evaluate_attempts=evaluate_attempts,
            evaluate_max_turns=evaluate_max_turns,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = f"--{str(first['loc'][0]).replace('_', '-')}: " if first["loc"] else ""
        _die(f"{where}{first['msg'].removeprefix('Value error, ')}")
    if config.proposer == "llm" and not config.llm_url:
        _die("--proposer llm needs --llm-url (an OpenAI-compatible endpoint)")
    roots = _roots(envs)
    policy = None
    if config.evaluate_policy and workers <= 1:  # built once here (a bad spec fails now); workers build their own
        from envtrain.agent.registry import make_policy

        try:
            policy = make_policy(config.evaluate_policy)
        except (ValueError, ImportError, OSError) as exc:
            _die(f"--evaluate-policy: {exc}")
    with Progress(
        TextColumn("scale"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task("scale", total=len(roots) * depth, note="children")
        done = {"lineages": 0}

        def node(_root: str, _depth: int) -> None:
            bar.advance(task)

        def lineage(status: dict) -> None:
            done["lineages"] += 1
            if workers > 1:
                bar.advance(task, status.get("depth", 0))
            bar.update(task, note=f"{done['lineages']}/{len(roots)} lineages")

        try:
            report = scale_all(
                roots,
                out,
                config,
                workers=workers,
                on_node=node if workers <= 1 else None,
                on_lineage=lineage,
                policy=policy,
            )
        except ValueError as exc:
            _die(str(exc))
        finally:
            if policy is not None:
                from envtrain.scale.evaluate import close_policy

                close_policy(policy)
    _print_report(report, out)


def _print_report(report: dict, out: Path) -> None:
    console = Console(highlight=False, soft_wrap=True)
    table = Table(title=f"scale: {report['lineages']} lineages, {report['children']} accepted children")
    table.add_column("metric")
    table.add_column("value", justify="right")
    d5 = min(5, report["depth_cap"])
    rows = [
        ("lineages at the depth cap", f"{report['at_cap']} ({report['share_at_cap']:.0%})"),
        (f"lineages reaching depth {d5}", f"{report['share_to_depth_5']:.0%}"),
        ("reached depth (count per depth)", " ".join(f"{d}:{n}" for d, n in report["reached"].items() if n)),
        ("reference path, current mean by depth", " ".join(f"{x:g}" for x in report["reference_length_current"])),
        (f"reference path growth, depth {d5} over depth 0", f"{report['reference_growth_at_5']}x"),
        ("outer executions per child", f"{report['outer_executions_per_child']}"),
        ("seconds per child (propose+apply+validate)", f"{report['seconds_per_child']}"),
    ]
    if report.get("children_per_second") is not None:
        rows.append(("children per second", f"{report['children_per_second']}"))
    ev = report.get("evaluation", {})
    if ev.get("nodes"):
        rows.append(
            (
                "target evaluation (nodes: passes / assessed failures / errors of attempts)",
                f"{ev['nodes']}: {ev['passes']} / {ev['assessed_failures']} / {ev['measurement_errors']} of {ev['attempts']}",
            )
        )
        rows.append(("lineages stopped by target evaluation", str(ev["lineages_stopped"])))
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    ops = Table(title="operators (steps in accepted / rejected plans)")
    ops.add_column("operator")
    ops.add_column("origin")
    ops.add_column("accepted", justify="right")
    ops.add_column("rejected", justify="right")
    origins = report.get("operator_origins", {})
    for name in sorted(set(report["operators_accepted"]) | set(report["operators_rejected"])):
        ops.add_row(
            name,
            origins.get(name, ""),
            str(report["operators_accepted"].get(name, 0)),
            str(report["operators_rejected"].get(name, 0)),
        )
    console.print(ops)
    if report["checks_failed"]:
        console.print("rejections by check: " + ", ".join(f"{k} {v}" for k, v in report["checks_failed"].items()), markup=False)
    for root, reason in report["stopped"].items():
        console.print(f"stopped early: {root}: {reason}", markup=False, style="yellow")
    for warning in report["warnings"]:
        console.print(f"resumed: {warning}", markup=False, style="yellow")
    for path, why in report.get("not_loaded", {}).items():
        console.print(f"not loaded: {path}: {why}", markup=False, style="red")
    console.print(f"lineages: {out / 'lineages'}; report: {out / 'report.json'}", markup=False)


def validate_cmd(
    parent: Path = typer.Argument(..., help="The parent environment."),
    child: Path = typer.Argument(..., help="The candidate child."),
    plan: Path = typer.Argument(..., help="The plan that made the child from the parent."),
    as_json: bool = typer.Option(False, "--json", help="Print the validation record as JSON."),
) -> None:
    """Re-run every validation check on a (parent, child, plan) triple; exit 0 when accepted."""
    from envtrain.core.env import Environment
    from envtrain.core.errors import SpecError
    from envtrain.scale.plan import Plan, PlanError
    from envtrain.scale.validate import CHECKS, validate

    try:
        parent_env = Environment.load(parent)
    except SpecError as exc:
        _die(f"parent: {exc}")
    try:
        the_plan = Plan.load(plan)
    except PlanError as exc:
        _die(str(exc))
    try:
        child_env = Environment.load(child)
    except SpecError as exc:  # a hand-edited child whose id no longer matches its content
        message = f"lineage: {exc}"
        if as_json:
            print(json.dumps({"accepted": False, "failed": ["lineage"], "diagnostics": [message]}))
        else:
            Console(highlight=False, soft_wrap=True).print(f"rejected: {message}", markup=False, style="red")
        raise typer.Exit(1)
    result = validate(parent_env, child_env, the_plan)
    if as_json:
        print(json.dumps({**result.model_dump(mode="json"), "failed": list(result.failed), "diagnostics": result.diagnostics()}))
    else:
        console = Console(highlight=False, soft_wrap=True)
        table = Table(title=f"validation of {result.child} (parent {result.parent})")
        table.add_column("check")
        table.add_column("result")
        table.add_column("ms", justify="right")
        by_name = {c.name: c for c in result.checks}
        for name in CHECKS:
            check = by_name[name]
            table.add_row(name, "[green]pass[/]" if check.passed else "[red]FAIL[/]", f"{check.seconds * 1000:.1f}")
        console.print(table)
        for line in result.diagnostics():
            console.print(line, markup=False, style="red")
        console.print("accepted" if result.accepted else "rejected", style="green" if result.accepted else "red")
    raise typer.Exit(0 if result.accepted else 1)


scale_app = typer.Typer(invoke_without_command=True, help="Recursive environment scaling (RES): harder children, same task.")
scale_app.callback()(scale_cmd)
scale_app.command("validate")(validate_cmd)
