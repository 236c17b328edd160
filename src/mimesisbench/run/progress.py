"""Rich progress bars for the two phases (a no-op stand-in when output is off)."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Items per second (``files/s`` in phase 1, ``ops/s`` in phase 2)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text(f"- {self.unit}/s", style="progress.data.speed")
        return Text(f"{speed:,.0f} {self.unit}/s", style="progress.data.speed")


class Bar:
    """One progress bar; ``enabled=False`` makes every call a no-op."""

    def __init__(self, description: str, total: int, unit: str, *, console: Console | None, enabled: bool) -> None:
        self._progress: Progress | None = None
        self._task: Any = None
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                RateColumn(unit),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                transient=False,
            )
            self._task = self._progress.add_task(description, total=total)

    def __enter__(self) -> Bar:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, n: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def update(self, completed: int, description: str | None = None) -> None:
        if self._progress is not None:
            if description is None:
                self._progress.update(self._task, completed=completed)
            else:
                self._progress.update(self._task, completed=completed, description=description)
