"""Run the demo's stages in order, resumably.

Each finished stage leaves OUT/stages/<name>.json (its summary and seconds), written atomically
after the stage's own outputs; a rerun with the same config skips finished stages and resumes the
interrupted one where its own machinery allows (compose, scale and collect resume per item, the
trainers from their last checkpoint, eval per checkpoint and benchmark). OUT/config.json pins the
config: a rerun with another config into the same folder is refused rather than mixing runs.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from envtrain.core.io import atomic_write_text
from envtrain.demo import stages
from envtrain.demo.config import DemoConfig
from envtrain.demo.display import Bar, Display

Stage = Callable[[DemoConfig, Path, Bar], dict[str, Any]]

# (name, what it does and which paper it implements, function)
STAGES: tuple[tuple[str, str, Stage], ...] = (
    ("compose", "environments from atoms over real datasets, admitted (LegoEnv §3)", stages.compose),
    ("scale", "recursive scaling of a subset, every child validated (RES §3)", stages.scale),
    ("split", "train / held-out by seed-skeleton family and lineage (no leakage)", stages.split_stage),
    ("collect", "verifier-filtered teacher trajectories on the train split", stages.collect),
    ("model", "the base checkpoint (tiny: tokenizer trained on train-split text only)", stages.model),
    ("sft", "full-parameter SFT on the kept trajectories (TRL SFTTrainer)", stages.sft),
    ("grpo", "GRPO from the SFT checkpoint, the verifiers as reward (TRL GRPOTrainer)", stages.grpo),
    ("eval", "base, SFT and GRPO on held-out originals, their scaled lineages, and BFCL", stages.evaluate),
)


class ConfigMismatch(ValueError):
    """OUT holds a run made with another config."""


def _pin_config(cfg: DemoConfig, out: Path, fresh: bool) -> None:
    pinned = out / "config.json"
    if fresh and out.exists():
        shutil.rmtree(out)
    if pinned.is_file():
        previous = json.loads(pinned.read_text(encoding="utf-8"))
        if previous.get("hash") != cfg.hash:
            raise ConfigMismatch(f"{out} holds a demo run made with another config; use --fresh to start over or another --out")
        return
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(pinned, json.dumps({"hash": cfg.hash, "config": cfg.model_dump(mode="json")}, indent=1) + "\n")


def finished(out: Path) -> dict[str, dict[str, Any]]:
    done = {}
    for name, _, _ in STAGES:
        path = out / "stages" / f"{name}.json"
        if path.is_file():
            done[name] = json.loads(path.read_text(encoding="utf-8"))
    return done


def run_demo(cfg: DemoConfig, out: Path, display: Display, *, fresh: bool = False, until: str | None = None) -> dict[str, Any]:
    """Run (or resume) every stage, then write the report; returns {stage: record}."""
    from envtrain.demo.report import write_report

    _pin_config(cfg, out, fresh)
    records = finished(out)
    total = len(STAGES) + 1
    for number, (name, what, fn) in enumerate(STAGES, start=1):
        if name in records:
            display.line(f"[{number}/{total}] {name}: done in an earlier run ({records[name]['seconds']} s), skipped")
        else:
            with display.stage(number, name, what) as bar:
                start = time.perf_counter()
                summary = fn(cfg, out, bar)
                record = {"stage": name, "seconds": round(time.perf_counter() - start, 1), "summary": summary}
            atomic_write_text(out / "stages" / f"{name}.json", json.dumps(record, indent=1) + "\n")
            records[name] = record
            display.line(f"{name}: {_one_line(summary)}  ({record['seconds']} s)")
        if name == until:
            return records
    with display.stage(total, "report", "tables and plots in report.md") as bar:
        bar.total(1)
        write_report(cfg, out, records)
        bar.advance()
    return records


def _one_line(summary: dict[str, Any]) -> str:
    parts = []
    for key, value in summary.items():
        if isinstance(value, (dict, list)):
            continue
        parts.append(f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}")
    return ", ".join(parts[:8])


__all__ = ["ConfigMismatch", "STAGES", "finished", "run_demo"]
