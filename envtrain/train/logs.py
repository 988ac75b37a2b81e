"""Progress lines, a metrics.jsonl curve, and the end-of-run summary, for both trainers.

The callback prints one line per logging step (rank 0 only) and appends the same record to
OUTPUT/metrics.jsonl, so a run's curve survives the process and can be plotted afterwards.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Printer = Callable[[str], None]

# Keys worth a place on the progress line, in this order; every logged key still goes to metrics.jsonl.
_LINE_KEYS = (
    "loss", "grad_norm", "learning_rate", "reward", "reward_std", "env/pass_rate", "env/score", "env/turns",
    "env/tool_calls", "env/model_tokens", "num_tokens", "mean_token_accuracy",
)


def make_callback(output_dir: Path, printer: Printer, label: str) -> Any:
    """A ``transformers.TrainerCallback`` (built here so importing this module stays light)."""
    from transformers import TrainerCallback

    class ProgressCallback(TrainerCallback):
        def __init__(self) -> None:
            self.path = Path(output_dir) / "metrics.jsonl"
            self.records: list[dict[str, Any]] = []
            self.start = time.perf_counter()

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.start = time.perf_counter()
            if state.is_world_process_zero:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                printer(f"{label}: {state.max_steps} update steps from step {state.global_step}")

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
            if not state.is_world_process_zero or not logs:
                return
            record = {"step": state.global_step, "seconds": round(time.perf_counter() - self.start, 3), **_plain(logs)}
            self.records.append(record)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
            if "train_runtime" in logs:
                return  # the end-of-training record: the summary table reports it
            shown = "  ".join(f"{k} {_fmt(record[k])}" for k in _LINE_KEYS if k in record)
            printer(f"{label} step {state.global_step}/{state.max_steps}  {shown}")

    return ProgressCallback()


def quiet(trainer: Any) -> None:
    """Drop transformers' PrinterCallback (raw log dicts on stdout); the progress callback prints a line instead."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)


def _plain(logs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in logs.items():
        if hasattr(value, "item"):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        out[key] = value
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def read_metrics(output_dir: Path) -> list[dict[str, Any]]:
    path = Path(output_dir) / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def plot_curve(output_dir: Path, key: str, out: Path, *, title: str = "") -> Path:
    """Plot one logged metric against the step (needs matplotlib, an optional dependency)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("plotting needs matplotlib: pip install matplotlib") from None
    rows = [r for r in read_metrics(output_dir) if r.get(key) is not None]
    steps, values = [r["step"] for r in rows], [r[key] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(steps, values, marker="o", ms=3, lw=1, alpha=0.6, label=key)
    window = 5
    if len(values) >= window:  # a trailing mean: single steps of a small group are noisy
        means = [sum(values[i - window + 1: i + 1]) / window for i in range(window - 1, len(values))]
        ax.plot(steps[window - 1:], means, lw=2, label=f"mean of {window} steps")
        ax.legend(fontsize=8)
    ax.set_xlabel("update step")
    ax.set_ylabel(key)
    ax.set_title(title or key, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


__all__ = ["Printer", "make_callback", "plot_curve", "quiet", "read_metrics"]
