"""Write an evaluation run (metrics.json, results.jsonl, episodes.jsonl, trajectories.jsonl,
report.md, plots/*.png) and paired comparisons of two runs (compare.json, compare.md, a scatter).

    OUT/metrics.json        the aggregate (Metrics): n_tasks, pass_at_1, mean_score, mean_turns, ...
    OUT/results.jsonl       one TaskResult per task
    OUT/episodes.jsonl      one EpisodeRow per attempt
    OUT/trajectories.jsonl  every graded trajectory (messages, token ids, logprobs)
    OUT/report.md           tables and the plots, for a person

(``OUT/journal.jsonl``, a running evaluation's finished episodes, is removed once these are written.)
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Sequence

from envtrain.core.io import atomic_write_text
from envtrain.eval.depth import depth_table, has_lineages
from envtrain.eval.journal import discard
from envtrain.eval.metrics import group_metrics, mean, pass_at_k_run, pooled_rubric_rate, task_results
from envtrain.eval.paired import PairedResult, compare, original_vs_deepest
from envtrain.eval.records import THRESHOLD, EpisodeRow, Metrics, TaskResult
from envtrain.rollout.trajectory import Trajectory

FIXTURE_NOTE = "policy `oracle` replays the benchmark's gold answers: a fixture that checks the wiring, not a model result"


def build_metrics(rows: Sequence[EpisodeRow], *, benchmark: str, policy: str, fixture: bool, threshold: float = THRESHOLD,
                  not_loaded: dict[str, str] | None = None) -> tuple[Metrics, list[TaskResult]]:
    results = task_results(rows, threshold)
    grade_ms = [1000 * r.grade_seconds for r in rows if r.grade_seconds is not None]
    inside = original_vs_deepest(results) if has_lineages(results) else None
    metrics = Metrics(
        benchmark=benchmark, policy=policy, fixture=fixture, n_tasks=len(results), n_episodes=len(rows),
        attempts=max((r.attempts for r in results), default=0), pass_at_1=mean(r.pass_at_1 for r in results),
        pass_at_k=pass_at_k_run(results), mean_score=mean(r.mean_score for r in results), threshold=threshold,
        threshold_pass=mean(r.threshold_pass for r in results), pooled_rubric_pass_rate=pooled_rubric_rate(results),
        mean_turns=mean(r.turns for r in rows), mean_tool_calls=mean(r.tool_calls for r in rows),
        mean_tool_errors=mean(r.tool_errors for r in rows), mean_prompt_tokens=mean(r.prompt_tokens for r in rows),
        mean_completion_tokens=mean(r.completion_tokens for r in rows), stop_reasons=dict(Counter(r.stop_reason for r in rows)),
        grade_ms_p50=statistics.median(grade_ms) if grade_ms else None,
        episode_seconds_p50=statistics.median([r.seconds for r in rows]) if rows else 0.0,
        by_group=group_metrics(results), by_depth=depth_table(results),
        lineages=len({r.root for r in results if r.depth > 0}) if inside else 0,
        original_vs_deepest=inside.model_dump(exclude={"pairs"}) if inside else None,
        not_loaded=not_loaded or {},
    )
    return metrics, results


def _jsonl(path: Path, items: Sequence) -> None:
    atomic_write_text(path, "".join(item.model_dump_json(by_alias=True) + "\n" for item in items))


def write_run(out: Path, rows: Sequence[EpisodeRow], trajectories: Sequence[Trajectory] | None, *, benchmark: str, policy: str,
              fixture: bool, threshold: float = THRESHOLD, not_loaded: dict[str, str] | None = None) -> Metrics:
    out.mkdir(parents=True, exist_ok=True)
    metrics, results = build_metrics(rows, benchmark=benchmark, policy=policy, fixture=fixture, threshold=threshold,
                                     not_loaded=not_loaded)
    _jsonl(out / "episodes.jsonl", rows)
    _jsonl(out / "results.jsonl", results)
    if trajectories is not None:
        _jsonl(out / "trajectories.jsonl", trajectories)
    atomic_write_text(out / "metrics.json", metrics.model_dump_json(indent=1, by_alias=True) + "\n")
    plots = _plots(out, metrics, results)
    atomic_write_text(out / "report.md", render_report(metrics, results, rows, plots))
    discard(out)  # every episode is in the files above now
    return metrics


def _plots(out: Path, metrics: Metrics, results: Sequence[TaskResult]) -> list[Path]:
    from envtrain.eval import plots

    folder = out / "plots"
    folder.mkdir(exist_ok=True)
    who = f"{metrics.policy}{' (gold replay fixture)' if metrics.fixture else ''} on {_short(metrics.benchmark)}"
    xlabel = "curriculum level" if metrics.benchmark.startswith("reasoning-gym") else "recursion depth budget" if metrics.lineages else "depth"
    made = []
    if len(metrics.by_depth) > 1:  # one depth makes a one-point line: the group bars say it better
        made.append(plots.plot_by_depth(metrics.by_depth, folder / "pass_and_score_by_depth.png", title=who, xlabel=xlabel))
        made.append(plots.plot_tool_calls_by_depth(metrics.by_depth, folder / "tool_calls_by_depth.png", title=who, xlabel=xlabel))
    if metrics.by_group:
        made.append(plots.plot_by_group(metrics.by_group, folder / "by_group.png", title=who))
    inside = original_vs_deepest(results) if metrics.lineages else None
    if inside is not None:
        made.append(plots.plot_paired(inside, folder / "paired_original_vs_deepest.png", title=f"{who}: original vs scaled"))
    return made


def _short(benchmark: str) -> str:
    # envs:/a/long/path/scaled -> envs:scaled; plot titles stay one line
    kind, sep, arg = benchmark.partition(":")
    return f"{kind}:{Path(arg).name or arg}" if kind == "envs" and sep else benchmark


def _ms(value: float | None) -> str:
    return "in the episode (the environment's verifier)" if value is None else f"{value:.3f}"


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def render_report(metrics: Metrics, results: Sequence[TaskResult], rows: Sequence[EpisodeRow], plots: Sequence[Path]) -> str:
    m = metrics
    lines = [f"# Evaluation: `{m.policy}` on `{m.benchmark}`", ""]
    if m.fixture:
        lines += [f"> **Fixture.** {FIXTURE_NOTE}.", ""]
    lines += ["| metric | value |", "| --- | --- |",
              f"| tasks / episodes | {m.n_tasks} / {m.n_episodes} ({m.attempts} attempt{'s' if m.attempts != 1 else ''} per task) |",
              f"| pass@1 (%) | {_pct(m.pass_at_1)} |"]
    for k, v in m.pass_at_k.items():
        if k != "1":
            lines.append(f"| pass@{k} (%) | {_pct(v)} |")
    lines += [f"| pass, native score ≥ {m.threshold:g} (%) | {_pct(m.threshold_pass)} |",
              f"| mean native score | {m.mean_score:.4f} |",
              f"| pooled rubric pass rate (%) | {_pct(m.pooled_rubric_pass_rate)} |",
              f"| mean turns / tool calls / tool errors | {m.mean_turns:.2f} / {m.mean_tool_calls:.2f} / {m.mean_tool_errors:.2f} |",
              f"| mean tokens (prompt / completion) | {m.mean_prompt_tokens:.0f} / {m.mean_completion_tokens:.0f} |",
              f"| stop reasons | {', '.join(f'{k} {v}' for k, v in sorted(m.stop_reasons.items()))} |",
              f"| grading ms per episode (p50) | {_ms(m.grade_ms_p50)} |", ""]
    if len(m.by_group) > 1:
        lines += ["## By group", "", "| group | tasks | pass@1 (%) | pass ≥ threshold (%) | mean score | turns | tool calls |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for name, g in m.by_group.items():
            lines.append(f"| {name or '(none)'} | {g.n_tasks} | {_pct(g.pass_at_1)} | {_pct(g.threshold_pass)} | {g.mean_score:.4f} "
                         f"| {g.mean_turns:.2f} | {g.mean_tool_calls:.2f} |")
        lines.append("")
    if len(m.by_depth) > 1 or m.lineages:
        lines += ["## By depth", ""]
        if m.lineages:
            lines += [f"{m.lineages} lineages. M = current retained state (RES Eq. 4), H = historical mean over budgets 0..d "
                      "(Eq. 5); a stopped lineage keeps its last environment.", "",
                      "| d | reach | continue | pass M (%) | pass H (%) | score M | score H | tool calls M | turns M |",
                      "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
            for r in m.by_depth:
                c, h = r.current or {}, r.historical or {}
                lines.append(f"| {r.depth} | {r.reach} | {r.continue_} | {_pct(c['threshold_pass'])} | {_pct(h['threshold_pass'])} "
                             f"| {c['mean_score']:.4f} | {h['mean_score']:.4f} | {c['mean_tool_calls']:.2f} | {c['mean_turns']:.2f} |")
        else:
            lines += ["| depth | tasks | pass@1 (%) | pass ≥ threshold (%) | mean score | tool calls | turns |",
                      "| --- | --- | --- | --- | --- | --- | --- |"]
            for r in m.by_depth:
                if r.mean:
                    lines.append(f"| {r.depth} | {r.n_tasks} | {_pct(r.mean['pass_at_1'])} | {_pct(r.mean['threshold_pass'])} "
                                 f"| {r.mean['mean_score']:.4f} | {r.mean['mean_tool_calls']:.2f} | {r.mean['mean_turns']:.2f} |")
        lines.append("")
    if m.original_vs_deepest:
        p = m.original_vs_deepest
        lines += ["## Original vs scaled (paired by lineage)", "",
                  f"Deepest environment against the original, per lineage, on mean native score: {p['wins']} wins, "
                  f"{p['losses']} losses, {p['ties']} ties (two-sided sign test p = {p['p_value']:.4g}); "
                  f"means {p['mean_a']:.4f} (original) and {p['mean_b']:.4f} (scaled).", ""]
    for plot in plots:
        lines += [f"![{plot.stem}](plots/{plot.name})", ""]
    failing = [r for r in rows if not r.passed][:15]
    if failing:
        lines += ["## First failing episodes", "", "| task | attempt | stop | score | why |", "| --- | --- | --- | --- | --- |"]
        for r in failing:
            why = r.detail.get("error_type") or r.detail.get("error") or ", ".join(r.detail.get("failed_assertions", [])[:2]) or ""
            lines.append(f"| {r.task_id} | {r.attempt} | {r.stop_reason} | {r.score:.2f} | {str(why)[:120].replace('|', '/')} |")
        lines.append("")
    if m.not_loaded:
        lines += ["## Not loaded", ""] + [f"- `{path}`: {why}" for path, why in m.not_loaded.items()] + [""]
    return "\n".join(lines)


def load_results(run: Path) -> tuple[Metrics, list[TaskResult]]:
    """A written run's metrics and per-task results."""
    metrics_path, results_path = run / "metrics.json", run / "results.jsonl"
    if not metrics_path.is_file() or not results_path.is_file():
        raise FileNotFoundError(f"{run}: not an evaluation run (no metrics.json and results.jsonl)")
    metrics = Metrics.model_validate_json(metrics_path.read_text(encoding="utf-8"))
    results = [TaskResult.model_validate_json(line) for line in results_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return metrics, results


def write_compare(out: Path, run_a: Path, run_b: Path, *, measure: str = "mean_score", key: str = "auto") -> PairedResult:
    from envtrain.eval import plots

    metrics_a, results_a = load_results(run_a)
    metrics_b, results_b = load_results(run_b)
    label_a, label_b = run_a.name or str(run_a), run_b.name or str(run_b)
    if label_a == label_b:
        label_a, label_b = str(run_a), str(run_b)
    result = compare(results_a, results_b, label_a=label_a, label_b=label_b, measure=measure, key=key)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "compare.json", result.model_dump_json(indent=1) + "\n")
    plot = plots.plot_paired(result, out / "paired_scatter.png", title=f"{metrics_b.policy} vs {metrics_a.policy}")
    lines = [f"# Paired comparison: `{label_b}` vs `{label_a}`", "", result.sentence() + ".", "",
             "| | A | B |", "| --- | --- | --- |",
             f"| run | `{run_a}` | `{run_b}` |", f"| benchmark | {metrics_a.benchmark} | {metrics_b.benchmark} |",
             f"| policy | {metrics_a.policy}{' (fixture)' if metrics_a.fixture else ''} | {metrics_b.policy}{' (fixture)' if metrics_b.fixture else ''} |",
             f"| mean {measure} over pairs | {result.mean_a:.4f} | {result.mean_b:.4f} |",
             f"| tasks without a partner | {result.only_a} | {result.only_b} |", "",
             f"Tasks matched by {'task id' if result.key == 'task' else 'lineage root (the deepest environment of each lineage)'}; "
             "ties are dropped from the sign test.", "", f"![paired scatter]({plot.name})", ""]
    atomic_write_text(out / "compare.md", "\n".join(lines))
    return result
