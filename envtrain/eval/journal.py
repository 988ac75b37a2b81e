"""An evaluation run's journal: every finished episode is appended as it finishes, so an
interrupted run resumes where it stopped (the same command with the same ``--out``).

    OUT/journal.jsonl   line 1: {"config": the run's settings}
                        then one {"key": [task index, task id, attempt], "row": EpisodeRow,
                        "trajectory": Trajectory | null} per finished episode

Each line is written whole and flushed. On resume, a torn last line (a crash mid-write) is
dropped; any other line that does not parse is an error naming it, and so is a journal of a run
with other settings. Episodes that ended in an error (an endpoint that went away, a document that
would not load) are run again. Once the run's own files are written the journal is removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from envtrain.core.io import atomic_write_text
from envtrain.eval.records import EpisodeRow
from envtrain.rollout.trajectory import Trajectory

JOURNAL = "journal.jsonl"

Key = tuple[int, str, int]  # (task index, task id, attempt): the index too, so equal ids cannot merge
Done = dict[Key, tuple[EpisodeRow, Trajectory | None]]


class JournalError(ValueError):
    """The journal cannot be resumed from; the message names the file and why."""


class Journal:
    """Append-only; one writer (the run's event loop)."""

    def __init__(self, path: Path, config: dict[str, Any]) -> None:
        self.path = path
        self.config = config
        self._file: IO[str] | None = None

    def resume(self) -> Done:
        """The episodes a previous run of these settings finished (none when there is no journal);
        the file is then open for appending."""
        done: Done = {}
        lines = self.path.read_text(encoding="utf-8").split("\n") if self.path.exists() else []
        if lines and lines[-1] == "":
            lines.pop()
        if lines:
            head = _parse(self.path, 1, lines[0], last=len(lines) == 1)
            if head is None:  # torn while the first line was written: nothing was done
                lines = []
            elif head.get("config") != self.config:
                raise JournalError(
                    f"{self.path}: an unfinished run with other settings ({_differs(head.get('config'), self.config)});"
                    " rerun with its settings to resume it, or remove the file to start over"
                )
        for n, line in enumerate(lines[1:], 2):
            item = _parse(self.path, n, line, last=n == len(lines))
            if item is None:
                lines = lines[: n - 1]
                break
            try:
                key = tuple(item["key"])
                row = EpisodeRow.model_validate(item["row"])
                trajectory = Trajectory.model_validate(item["trajectory"]) if item.get("trajectory") else None
            except (KeyError, TypeError, ValidationError) as exc:
                raise JournalError(f"{self.path}: line {n} is not an episode record ({str(exc).splitlines()[0]})") from None
            if row.stop_reason != "error":
                done[key] = (row, trajectory)  # type: ignore[index]
        # Rewrite what was read (a torn tail dropped), so appends always start on a fresh line; atomically,
        # so a crash here cannot lose the episodes already kept.
        text = "".join(line + "\n" for line in lines) or json.dumps({"config": self.config}, sort_keys=True) + "\n"
        atomic_write_text(self.path, text)
        self._file = self.path.open("a", encoding="utf-8")
        return done

    def add(self, key: Key, row: EpisodeRow, trajectory: Trajectory | None) -> None:
        assert self._file is not None, "resume() opens the journal"
        record = {"key": list(key), "row": row.model_dump(mode="json"),
                  "trajectory": trajectory.model_dump(mode="json") if trajectory is not None else None}
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _parse(path: Path, n: int, line: str, *, last: bool) -> dict[str, Any] | None:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        if last:
            return None
        raise JournalError(f"{path}: line {n} is not JSON ({exc.msg}); only a torn last line is dropped") from None
    if not isinstance(item, dict):
        raise JournalError(f"{path}: line {n} is not a JSON object")
    return item


def _differs(old: Any, new: dict[str, Any]) -> str:
    if not isinstance(old, dict):
        return "no settings recorded"
    names = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return "differs in " + ", ".join(names)


def discard(out: Path) -> None:
    """Remove a finished run's journal (its files now hold every episode)."""
    (out / JOURNAL).unlink(missing_ok=True)


__all__ = ["JOURNAL", "Journal", "JournalError", "discard"]
