"""``envtrain bench-export``: a benchmark's tasks as envtrain environment documents.

    envtrain bench-export bfcl-multi-turn --out envs/bfcl            # 800 documents, OUT/<entry id>.json
    envtrain bench-export bfcl-multi-turn:base --limit 20 --check --out envs/bfcl-base

The documents name Python handlers (``bfcl.<Class>.<method>``): run them with
``Runtime(env, handlers=bfcl_handlers())`` (``envtrain eval --benchmark envs:DIR`` does).
Registered by ``envtrain.cli`` (``app.command("bench-export")(export_cmd)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn, Optional

import typer
from rich.console import Console
from rich.table import Table


def _die(message: str, code: int = 2) -> NoReturn:
    Console(stderr=True, highlight=False, soft_wrap=True).print("error:", message, style="bold red", markup=False)
    raise typer.Exit(code)


def export_cmd(
    benchmark: str = typer.Argument(..., help="bfcl-multi-turn[:CATEGORY[,CATEGORY]] (base, miss_func, miss_param, long_context)"),
    out: Path = typer.Option(..., help="Folder for the environment documents (one JSON per task)."),
    limit: Optional[int] = typer.Option(None, min=1, help="At most N tasks per category."),
    check: bool = typer.Option(False, help="Run the five-condition admission check on each, with the BFCL handlers."),
) -> None:
    """Write a benchmark's tasks as environment documents that envtrain can check, evaluate and scale."""
    from rich.progress import track

    from envtrain.bench.bfcl.data import CATEGORIES, load_entries
    from envtrain.bench.bfcl.env import bfcl_environment, bfcl_handlers
    from envtrain.core.admission import check_admission

    kind, sep, arg = benchmark.partition(":")
    if kind != "bfcl-multi-turn":
        _die(f"only bfcl-multi-turn exports to environments (reasoning-gym has no tools or world; envs:DIR already are), got {benchmark!r}")
    categories = [c.strip() for c in arg.split(",") if c.strip()] if sep else list(CATEGORIES)
    unknown = [c for c in categories if c not in CATEGORIES]
    if unknown:
        _die(f"unknown BFCL multi-turn category {unknown[0]!r} (categories: {', '.join(CATEGORIES)})")
    entries = [e for c in categories for e in (load_entries(c)[:limit] if limit else load_entries(c))]
    handlers = bfcl_handlers() if check else None
    out.mkdir(parents=True, exist_ok=True)
    admitted, failures = 0, []
    for entry in track(entries, description="export", console=Console(stderr=True)):
        env = bfcl_environment(entry)
        env.save(out / f"{entry.id}.json")
        if check:
            report = check_admission(env, handlers=handlers)
            admitted += report.admitted
            failures += [(entry.id, f) for f in report.failures]
    console = Console(highlight=False, soft_wrap=True)
    table = Table(title=f"bench-export: {benchmark}")
    table.add_column("environments", justify="right")
    table.add_column("admitted", justify="right")
    table.add_column("folder")
    table.add_row(str(len(entries)), f"{admitted}/{len(entries)}" if check else "not checked", str(out))
    console.print(table)
    for entry_id, f in failures:
        console.print(f"{entry_id} condition ({f.condition}): {f.assertion or ''} {f.reason}", markup=False, style="red")
    if check and admitted < len(entries):
        raise typer.Exit(1)
