"""Trajectory datasets on disk: atomic shards while collecting, one dataset when done.

    OUT/shards/part-00000/ ...   every attempt, as written (the log a rerun resumes from)
    OUT/  (dataset files)        the kept trajectories: ``datasets.load_from_disk(OUT)``
    OUT/summary.json             what the run measured

A shard is written to a temporary folder and renamed into place, so it is whole or absent: a
crash loses at most the episodes not yet flushed, and a rerun skips every (env, attempt) a
shard already holds. Shards of different runs (``--shard I/N``) merge without duplicates.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from envtrain.rollout.trajectory import Trajectory

_PART = re.compile(r"^part-(\d{5})$")


class StoreError(RuntimeError):
    """Writing failed (disk full, permissions); what was written before stays."""


class TrajectoryStore:
    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.shards = self.out / "shards"
        self.shards.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # shards are flushed from worker threads; one names and writes at a time

    def clean(self) -> None:
        """Remove shards a crash left half-written. Only the one collector writing to OUT may call it."""
        for stale in self.shards.glob(".tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)

    def parts(self) -> list[Path]:
        return sorted(p for p in self.shards.iterdir() if _PART.match(p.name) and (p / "state.json").exists())

    def done(self) -> set[tuple[str, int]]:
        """The (env id, attempt) pairs already on disk."""
        from datasets import load_from_disk

        keys: set[tuple[str, int]] = set()
        for part in self.parts():
            ds = load_from_disk(str(part))
            keys.update(zip(ds["env_id"], ds["attempt"]))
        return keys

    def write(self, trajectories: list[Trajectory]) -> Path:
        """One shard, atomically. Raises StoreError naming the cause."""
        from datasets import Dataset

        rows = Dataset.from_list([t.to_row() for t in trajectories])
        with self._lock:
            existing = [int(_PART.match(p.name).group(1)) for p in self.shards.iterdir() if _PART.match(p.name)]  # type: ignore[union-attr]
            name = f"part-{(max(existing) + 1) if existing else 0:05d}"
            tmp = self.shards / f".tmp-{name}"
            try:
                rows.save_to_disk(str(tmp))
                os.replace(tmp, self.shards / name)
            except OSError as exc:
                shutil.rmtree(tmp, ignore_errors=True)
                raise StoreError(f"could not write shard {name} under {self.shards}: {exc.strerror or exc}") from None
        return self.shards / name

    def all(self) -> Any:
        """Every attempt on disk, one row each (duplicates, which only a bug could make, dropped)."""
        return _concat_unique(self.parts())

    def finalize(self, keep: Callable[[list[dict[str, Any]]], list[int]]) -> Any:
        """Write the kept rows as the dataset at OUT. ``keep`` gets all rows' metadata, returns indices."""
        data = self.all()
        if data is None:
            return None
        meta = data.select_columns(["env_id", "attempt", "passed", "score", "num_turns"]).to_list()
        # In (environment, attempt) order, not the order episodes happened to finish in: the same
        # collection gives the same dataset however many ran at once, and so the same training order.
        kept = data.select(sorted(keep(meta), key=lambda i: (meta[i]["env_id"], meta[i]["attempt"])))
        _save_into(kept, self.out)
        return kept


def _concat_unique(parts: Iterable[Path]) -> Any:
    from datasets import concatenate_datasets, load_from_disk

    loaded = [load_from_disk(str(p)) for p in parts]
    if not loaded:
        return None
    data = concatenate_datasets(loaded)
    seen: set[tuple[str, int]] = set()
    unique = []
    for i, key in enumerate(zip(data["env_id"], data["attempt"])):
        if key not in seen:
            seen.add(key)
            unique.append(i)
    return data if len(unique) == len(data) else data.select(unique)


def _save_into(data: Any, out: Path) -> None:
    """Save a dataset into ``out`` beside other folders: write aside, then move files in, state.json last."""
    tmp = out / ".tmp-final"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        data.save_to_disk(str(tmp), num_shards=1 if len(data) == 0 else None)  # an empty set still loads
        for old in out.glob("data-*.arrow"):
            old.unlink()
        names = sorted(p.name for p in tmp.iterdir())
        for name in [n for n in names if n != "state.json"] + ["state.json"]:
            os.replace(tmp / name, out / name)
    except OSError as exc:
        raise StoreError(f"could not write the dataset at {out}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def merge(dirs: list[str | Path], out: str | Path) -> Any:
    """Concatenate the datasets of several collection outputs (e.g. the N shards of a Slurm array)."""
    from datasets import concatenate_datasets, load_from_disk

    datasets = [load_from_disk(str(d)) for d in dirs]
    merged = concatenate_datasets(datasets)
    keys = list(zip(merged["env_id"], merged["attempt"]))
    if len(set(keys)) != len(keys):
        raise StoreError("the datasets overlap: the same (environment, attempt) appears twice; were the shards split differently?")
    merged = merged.select(sorted(range(len(keys)), key=keys.__getitem__))  # the same rows in any order of dirs, one order
    Path(out).mkdir(parents=True, exist_ok=True)
    _save_into(merged, Path(out))
    return merged
