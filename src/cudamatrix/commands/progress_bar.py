"""A live progress bar for a terminal (rich); a CI log gets the plain lines of
`orchestrator.progress.Progress` instead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from ..orchestrator.progress import Progress as PlainProgress

if TYPE_CHECKING:
    from rich.progress import TaskID

    from ..record.results import CellResult


class RichProgress(PlainProgress):
    """A live bar (cells done/total, ETA) for terminals; CI logs get plain lines instead."""

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = console
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
                            TimeRemainingColumn(), console=console)
        self.task: TaskID | None = None

    def note(self, text: str) -> None:
        self.console.print(text, markup=False)

    def start(self, total: int) -> None:
        self.bar.start()
        self.task = self.bar.add_task("cells", total=total)

    def cell_done(self, result: CellResult) -> None:
        result = self.settle(result)
        if result.outcome not in ("pass", "xfail", "skip"):
            self.bar.console.print(f"{result.outcome:>5}  {result.cell.id}: "
                                   f"{(result.message or result.reason)[:120]}", markup=False)
        if self.task is not None:
            self.bar.advance(self.task)

    def finish(self) -> None:
        self.bar.stop()
