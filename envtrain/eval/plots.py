"""PNG plots a person can read at a glance: pass rate and native score by depth, tool calls by
depth, per-group bars, and the paired scatter of two runs. matplotlib loads only here (Agg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from envtrain.eval.paired import PairedResult
from envtrain.eval.records import DepthRow, GroupMetrics

_BLUE, _ORANGE, _GREEN, _GREY, _RED = "#1f77b4", "#ff7f0e", "#2ca02c", "#7f7f7f", "#d62728"


def wrap(title: str, width: int = 70) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(title, width)) or title


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on servers and CI
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 11, "axes.titlesize": 12, "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _depth_axis(ax: Any, depths: list[int], xlabel: str) -> None:
    ax.set_xticks(depths)
    ax.set_xlabel(xlabel)
    ax.grid(axis="y", alpha=0.3)
    if len(depths) == 1:
        ax.set_xlim(depths[0] - 1, depths[0] + 1)


def _series(ax: Any, rows: Sequence[DepthRow], measure: str, scale: float, *, label_mean: str) -> None:
    at_depth = [(r.depth, r.mean[measure] * scale) for r in rows if r.mean]
    if any(r.current for r in rows):
        ax.plot([r.depth for r in rows], [r.current[measure] * scale for r in rows if r.current], "o-", color=_BLUE,
                label="current retained state (Eq. 4)")
        ax.plot([r.depth for r in rows], [r.historical[measure] * scale for r in rows if r.historical], "s--", color=_ORANGE,
                label="historical mean 0..d (Eq. 5)")
        ax.plot([d for d, _ in at_depth], [v for _, v in at_depth], "^:", color=_GREY, label="environments at exactly d")
    else:
        ax.plot([d for d, _ in at_depth], [v for _, v in at_depth], "o-", color=_BLUE, label=label_mean, markersize=8)
    for d, v in at_depth if not any(r.current for r in rows) else []:
        ax.annotate(f"{v:.1f}" if scale == 100 else f"{v:.2f}", (d, v), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=9)


def plot_by_depth(rows: Sequence[DepthRow], path: Path, *, title: str, xlabel: str = "depth") -> Path:
    plt = _pyplot()
    depths = [r.depth for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    _series(left, rows, "threshold_pass", 100, label_mean="tasks at depth d")
    left.set_ylabel("pass rate (%) — score ≥ threshold")
    left.set_ylim(-3, 112)
    left.set_title("(a) pass rate")
    _series(right, rows, "mean_score", 1, label_mean="tasks at depth d")
    right.set_ylabel("mean native score")
    right.set_ylim(-0.03, 1.12)
    right.set_title("(b) native score")
    for ax in (left, right):
        _depth_axis(ax, depths, xlabel)
    left.legend(loc="best", fontsize=9, frameon=False)
    fig.suptitle(wrap(title, 110))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_tool_calls_by_depth(rows: Sequence[DepthRow], path: Path, *, title: str, xlabel: str = "depth") -> Path:
    plt = _pyplot()
    depths = [r.depth for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    _series(left, rows, "mean_tool_calls", 1, label_mean="tasks at depth d")
    left.set_ylabel("tool calls per episode")
    left.set_title("(a) tool calls")
    _series(right, rows, "mean_turns", 1, label_mean="tasks at depth d")
    right.set_ylabel("assistant turns per episode")
    right.set_title("(b) turns")
    for ax in (left, right):
        _depth_axis(ax, depths, xlabel)
        ax.set_ylim(bottom=0)
    left.legend(loc="best", fontsize=9, frameon=False)
    fig.suptitle(wrap(title, 110))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_by_group(groups: dict[str, GroupMetrics], path: Path, *, title: str) -> Path:
    """Pass rate, native score and tool calls per group (category, dataset, source), as bars."""
    plt = _pyplot()
    names = list(groups)
    height = max(3.0, 0.45 * len(names) + 1.6)
    fig, axes = plt.subplots(1, 3, figsize=(13, height), sharey=True)
    ys = list(range(len(names)))
    panels = [
        ("pass rate (%), score ≥ threshold", [groups[n].threshold_pass * 100 for n in names], _BLUE, "{:.1f}%", 115),
        ("mean native score", [groups[n].mean_score for n in names], _GREEN, "{:.2f}", 1.15),
        ("tool calls per episode", [groups[n].mean_tool_calls for n in names], _ORANGE, "{:.1f}", None),
    ]
    for ax, (label, values, color, fmt, top) in zip(axes, panels):
        ax.barh(ys, values, color=color)
        for y, v in zip(ys, values):
            ax.annotate(fmt.format(v), (v, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=9)
        ax.set_xlim(0, top if top is not None else max(max(values, default=0) * 1.2, 1))
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels([f"{n or '(none)'} (n={groups[n].n_tasks})" for n in names])
    axes[0].invert_yaxis()
    fig.suptitle(wrap(title, 110))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_paired(result: PairedResult, path: Path, *, title: str) -> Path:
    """Each task a point (A on x, B on y); above the diagonal B wins. Equal points are spread a
    little so a pile of ties shows as a pile, not one dot."""
    import random

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 6.8))
    rng = random.Random(0)
    colors = {"win": _GREEN, "loss": _RED, "tie": _GREY}
    labels = {"win": f"{result.label_b} higher ({result.wins})", "loss": f"{result.label_b} lower ({result.losses})",
              "tie": f"tie ({result.ties})"}
    for outcome in ("tie", "loss", "win"):
        pts = [p for p in result.pairs if p.outcome == outcome]
        if not pts:
            continue
        jx = [p.a + rng.uniform(-0.012, 0.012) for p in pts]
        jy = [p.b + rng.uniform(-0.012, 0.012) for p in pts]
        ax.scatter(jx, jy, s=28, alpha=0.65, color=colors[outcome], label=labels[outcome], edgecolors="none")
    ax.plot([0, 1], [0, 1], "--", color="black", linewidth=1)
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_aspect("equal")
    measure = result.measure.replace("_", " ")
    ax.set_xlabel(f"{result.label_a}: {measure}")
    ax.set_ylabel(f"{result.label_b}: {measure}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, fontsize=9, frameon=False)
    ax.set_title(f"{wrap(title, 60)}\nW:L:T {result.wins}:{result.losses}:{result.ties}, sign test p = {result.p_value:.3g}", fontsize=11)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
