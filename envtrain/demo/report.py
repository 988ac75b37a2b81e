"""OUT/report.md and OUT/plots/*.png from the stage records and the runs they wrote.

Every number comes from a file a stage wrote (stages/*.json, eval/*/*/metrics.json,
scale/report.json, sft|grpo/metrics.jsonl); nothing is typed in. The teacher label says when the
trajectories came from the oracle fixture.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envtrain.core.io import atomic_write_text
from envtrain.demo.config import DemoConfig

CHECKPOINTS = ("base", "sft", "grpo")


def _load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _depth_means(metrics: dict[str, Any], depth: int | None) -> tuple[float, float, int] | None:
    """(pass@1, mean score, tasks) at one depth (None: the deepest evaluated)."""
    rows = metrics.get("by_depth") or []
    if not rows:
        return None
    row = rows[-1] if depth is None else next((r for r in rows if r["depth"] == depth), None)
    if row is None:
        return None
    return row["mean"]["pass_at_1"], row["mean"]["mean_score"], row["n_tasks"]


def summary_rows(out: Path) -> list[dict[str, Any]]:
    """One row per checkpoint: held-out original, held-out scaled (deepest), BFCL; pass@1 and native score."""
    rows = []
    for name in CHECKPOINTS:
        held = _load(out / "eval" / name / "heldout" / "metrics.json")
        bfcl = _load(out / "eval" / name / "bfcl" / "metrics.json")
        if held is None and bfcl is None:
            continue
        row: dict[str, Any] = {"checkpoint": name}
        if held is not None:
            original, deepest = _depth_means(held, 0), _depth_means(held, None)
            if original:
                row.update(original_pass=original[0], original_score=original[1], original_tasks=original[2])
            if deepest:
                row.update(scaled_pass=deepest[0], scaled_score=deepest[1], scaled_tasks=deepest[2], scaled_depth=held["by_depth"][-1]["depth"])
            paired = held.get("original_vs_deepest")
            if paired:
                row["paired"] = (f"{paired['wins']} wins / {paired['losses']} losses / {paired['ties']} ties, "
                                 f"sign test p = {paired['p_value']:.3g}")
        if bfcl is not None:
            row.update(bfcl_pass=bfcl["pass_at_1"], bfcl_score=bfcl["mean_score"], bfcl_tasks=bfcl["n_tasks"])
        if held is not None:
            row.update(tool_calls=held["mean_tool_calls"], tool_errors=held["mean_tool_errors"], stops=held["stop_reasons"])
        rows.append(row)
    return rows


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}"


# -- plots ----------------------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_checkpoints(rows: list[dict[str, Any]], path: Path) -> Path:
    plt = _pyplot()
    sets = [("original_pass", "original_score", "held-out original"), ("scaled_pass", "scaled_score", "held-out scaled"),
            ("bfcl_pass", "bfcl_score", "BFCL multi-turn")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    width = 0.8 / len(sets)
    for ax, (index, title) in zip(axes, ((0, "pass rate (pass@1)"), (1, "native score"))):
        for k, keys in enumerate(sets):
            values = [r.get(keys[index]) or 0.0 for r in rows]
            xs = [i + (k - 1) * width for i in range(len(rows))]
            bars = ax.bar(xs, values, width, label=keys[2])
            ax.bar_label(bars, fmt="%.2f", fontsize=7)  # a zero bar is invisible without its number
        ax.set_xticks(range(len(rows)), [r["checkpoint"] for r in rows])
        ax.set_ylim(0, 1.05)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_by_depth(out: Path, path: Path) -> Path:
    """Pass rate and native score by scaling depth on the held-out lineages, one line per checkpoint."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for name in CHECKPOINTS:
        metrics = _load(out / "eval" / name / "heldout" / "metrics.json")
        if not metrics:
            continue
        depths = [r["depth"] for r in metrics["by_depth"]]
        for ax, key in zip(axes, ("pass_at_1", "mean_score")):
            ax.plot(depths, [r["mean"][key] for r in metrics["by_depth"]], marker="o", label=name)
    for ax, title in zip(axes, ("pass rate by depth (0 = original)", "native score by depth")):
        ax.set_xlabel("RES depth")
        ax.set_ylim(0, 1.05)
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_reference_path(scale_report: dict[str, Any], path: Path) -> Path:
    plt = _pyplot()
    current = scale_report["reference_length_current"]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    ax.plot(range(len(current)), current, marker="o", label="current-state mean (RES Eq. 4)")
    historical = scale_report.get("reference_length_historical")
    if historical:
        ax.plot(range(len(historical)), historical, marker="s", ls="--", label="historical mean (RES Eq. 5)")
    ax.set_xlabel("RES depth")
    ax.set_ylabel("tool calls in the reference solution")
    ax.set_title(f"reference path length by depth ({scale_report['lineages']} lineages)")
    ax.set_xticks(range(len(current)))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _plots(out: Path, rows: list[dict[str, Any]]) -> dict[str, Path]:
    from envtrain.train.logs import plot_curve, read_metrics

    folder = out / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, Path] = {}
    if rows:
        made["checkpoints"] = plot_checkpoints(rows, folder / "checkpoints.png")
        made["by_depth"] = plot_by_depth(out, folder / "heldout_by_depth.png")
    scale_report = _load(out / "scale" / "report.json")
    if scale_report and scale_report.get("reference_length_current"):
        made["reference_path"] = plot_reference_path(scale_report, folder / "reference_path.png")
    if any(r.get("reward") is not None for r in read_metrics(out / "grpo")):
        made["grpo_reward"] = plot_curve(out / "grpo", "reward", folder / "grpo_reward.png", title="GRPO: mean verifier reward per step")
    if any(r.get("loss") is not None for r in read_metrics(out / "sft")):
        made["sft_loss"] = plot_curve(out / "sft", "loss", folder / "sft_loss.png", title="SFT: training loss per step")
    return made


# -- report.md ------------------------------------------------------------------------------------


def _stage_table(records: dict[str, Any]) -> list[str]:
    lines = ["| stage | seconds | result |", "| --- | ---: | --- |"]
    for name, record in records.items():
        s = record["summary"]
        lines.append(f"| {name} | {record['seconds']} | {_describe(name, s)} |")
    lines.append(f"| total | {round(sum(r['seconds'] for r in records.values()), 1)} | |")
    return lines


def _describe(name: str, s: dict[str, Any]) -> str:
    if name == "compose":
        return f"{s['admitted']} of {s['indices']} admitted, {s['apps']} apps, {s['archetypes']} archetypes"
    if name == "scale":
        lengths = " → ".join(f"{x:g}" for x in s["reference_length_by_depth"])
        return f"{s['lineages']} lineages, {s['children']} accepted children, {s['at_cap']} at depth {s['depth_cap']}; reference path {lengths}"
    if name == "split":
        return (f"train {s['train_original']} original + {s['train_scaled']} scaled ({s['train_families']} families); held-out "
                f"{s['heldout_original']} + {s['heldout_scaled']} ({s['heldout_families']} families); {s['leakage_check']}")
    if name == "collect":
        return f"teacher {s['teacher']}: {s['kept']} kept of {s['attempts']} episodes on {s['environments']} environments"
    if name == "model":
        return (f"tiny Qwen3 {s['layers']} layers, hidden {s['hidden']}, vocab {s['vocab']}, random weights" if s.get("built")
                else f"{s['base']}")
    if name == "sft":
        return (f"{s['steps']} steps, loss {_num(s.get('first_loss'))} → {_num(s.get('last_loss'))}, next-token accuracy on"
                f" trained tokens {_num(s.get('first_token_accuracy'))} → {_num(s.get('last_token_accuracy'))}")
    if name == "grpo":
        signal = s.get("steps_with_reward_signal")
        note = "" if signal is None else (f"; {signal} of {s['steps']} steps had a group with unequal rewards" + (
            " (none did: no policy gradient reached the model)" if signal == 0 else ""))
        return f"{s['steps']} steps, reward ({s['reward']}) {_num(s.get('reward_first'))} → {_num(s.get('reward_last'))}{note}"
    if name == "eval":
        skipped = "; ".join(f"{k} skipped: {v}" for k, v in s.get("skipped", {}).items())
        return f"{len(s['checkpoints'])} checkpoints" + (f"; {skipped}" if skipped else "")
    return ""


def results_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| checkpoint | held-out original pass / score | held-out scaled pass / score | BFCL pass / score "
             "| held-out tool calls (errors) per episode | held-out stop reasons |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        stops = ", ".join(f"{k} {v}" for k, v in sorted((r.get("stops") or {}).items()))
        lines.append(f"| {r['checkpoint']} | {_pct(r.get('original_pass'))} / {_num(r.get('original_score'))} "
                     f"| {_pct(r.get('scaled_pass'))} / {_num(r.get('scaled_score'))} "
                     f"| {_pct(r.get('bfcl_pass'))} / {_num(r.get('bfcl_score'))} "
                     f"| {_num(r.get('tool_calls'))} ({_num(r.get('tool_errors'))}) | {stops} |")
    return lines


def _decoding(cfg: DemoConfig) -> str:
    e = cfg.eval
    how = "Greedy decoding" if e.temperature == 0 else f"Sampling at temperature {e.temperature:g} (seed {cfg.seed})"
    return how + (f", {e.attempts} attempts per task" if e.attempts > 1 else ", one attempt per task")


def write_report(cfg: DemoConfig, out: Path, records: dict[str, Any]) -> Path:
    rows = summary_rows(out)
    plots = _plots(out, rows)
    collect = records.get("collect", {}).get("summary", {})
    first = rows[0] if rows else {}
    lines = [
        "# envtrain demo report", "",
        "What ran, in order, with every number read from the files each stage wrote under this folder.",
        "Whatever the checkpoints score is reported as it is: the demo shows the pipeline and its measurements,"
        " not a claim about model quality" + (" (the default base model is a tiny randomly initialised Qwen3)." if cfg.model.base == "tiny" else "."),
        "",
    ]
    if collect.get("fixture"):
        lines += [f"**Teacher: {collect['teacher']}.** The SFT data are replays of reference solutions, so the SFT and GRPO"
                  " checkpoints learned from a fixture; a real teacher is `collect.teacher: openai:URL` or `vllm:MODEL`.", ""]
    lines += ["## Stages", "", *_stage_table(records), "",
              "## Checkpoints on held-out environments and BFCL", "",
              f"Held-out: {first.get('original_tasks', 0)} original environments (seed-skeleton families never trained on) and their"
              f" RES-scaled descendants at depth {first.get('scaled_depth', '-')}; BFCL v4 multi-turn:"
              f" {first.get('bfcl_tasks', 0)} tasks of {', '.join(cfg.eval.bfcl_categories)}, graded by BFCL's own checker."
              f" {_decoding(cfg)}, at most {cfg.eval.max_turns} turns of {cfg.eval.max_tokens} tokens.", "",
              *results_table(rows), ""]
    paired = [f"- {r['checkpoint']}: original vs deepest, per lineage (native score): {r['paired']}" for r in rows if r.get("paired")]
    if paired:
        lines += ["Paired original vs scaled:", "", *paired, ""]
    titles = {"checkpoints": "Pass rate and native score per checkpoint", "by_depth": "Held-out lineages by RES depth",
              "reference_path": "Reference path length by depth", "grpo_reward": "GRPO reward curve", "sft_loss": "SFT loss"}
    lines += ["## Plots", ""]
    for key, path in plots.items():
        lines += [f"### {titles[key]}", "", f"![{titles[key]}]({path.relative_to(out)})", ""]
    lines += ["## Where everything is", "",
              "- `compose/` environments (`envs/`), manifest and report of the LegoEnv run",
              "- `scale/lineages/<root>/<depth>.json` with `.plan.json` and `.validation.json`; `scale/report.json`",
              "- `split/train`, `split/heldout`, `split/split.json` (ids, held-out families, the leakage check)",
              "- `collect/` the trajectory dataset (`datasets.load_from_disk`), `collect/summary.json`",
              "- `configs/sft.yaml`, `configs/grpo.yaml`: rerun a training stage alone with `envtrain sft|grpo --config`",
              "- `sft/`, `grpo/`: checkpoints and `metrics.jsonl`; `eval/<checkpoint>/<benchmark>/`: metrics, per-task results, reports",
              ""]
    path = out / "report.md"
    atomic_write_text(path, "\n".join(lines))
    return path


__all__ = ["results_table", "summary_rows", "write_report"]
