"""What the demo shows while it runs: one progress bar per stage, and lines between them.

``Display`` is the interface the stages call; ``RichDisplay`` draws it in a terminal and
``SilentDisplay`` (tests, library use) records lines only.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextlib import AbstractContextManager
from typing import Iterator, Protocol


class Bar(Protocol):
    def total(self, n: int | None) -> None: ...
    def advance(self, n: int = 1, note: str = "") -> None: ...
    def set(self, done: int, total: int | None = None, note: str = "") -> None: ...


class Display(Protocol):
    def stage(self, number: int, name: str, what: str) -> AbstractContextManager[Bar]: ...
    def line(self, text: str) -> None: ...


class _NullBar:
    def total(self, n: int | None) -> None:
        pass

    def advance(self, n: int = 1, note: str = "") -> None:
        pass

    def set(self, done: int, total: int | None = None, note: str = "") -> None:
        pass


class SilentDisplay:
    def __init__(self) -> None:
        self.lines: list[str] = []

    @contextmanager
    def stage(self, number: int, name: str, what: str) -> Iterator[Bar]:
        self.lines.append(f"[{number}] {name}: {what}")
        yield _NullBar()

    def line(self, text: str) -> None:
        self.lines.append(text)


class _RichBar:
    def __init__(self, progress, task) -> None:
        self.progress, self.task = progress, task

    def total(self, n: int | None) -> None:
        self.progress.update(self.task, total=n)

    def advance(self, n: int = 1, note: str = "") -> None:
        self.progress.update(self.task, advance=n, **({"note": note} if note else {}))

    def set(self, done: int, total: int | None = None, note: str = "") -> None:
        extra = {"total": total} if total is not None else {}
        self.progress.update(self.task, completed=done, **extra, **({"note": note} if note else {}))


class RichDisplay:
    """Stage bars on stderr (so stdout keeps only the summary table) with elapsed and remaining time."""

    def __init__(self, stages: int) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.stages = stages

    @contextmanager
    def stage(self, number: int, name: str, what: str) -> Iterator[Bar]:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.console.print(f"[bold]\\[{number}/{self.stages}] {name}[/]: {what}")
        columns = (TextColumn(f"  {name:<8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                   TextColumn("{task.fields[note]}"))
        with Progress(*columns, console=self.console, transient=False) as progress:
            yield _RichBar(progress, progress.add_task(name, total=None, note=""))

    def line(self, text: str) -> None:
        self.console.print(f"  {text}", markup=False)


__all__ = ["Bar", "Display", "RichDisplay", "SilentDisplay"]
