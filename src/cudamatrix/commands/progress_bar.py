"""A live progress bar for a terminal (rich); a CI log gets the plain lines of
`orchestrator.progress.Progress` instead."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from ..common.log_line import log_line, say
from ..common.words import shortened
from ..orchestrator.progress import Progress as PlainProgress
from ..orchestrator.progress import said_duration
from ..record.diagnose import said_beyond, said_first
from ..record.outcomes import QUIET

if TYPE_CHECKING:
    from rich.progress import TaskID

    from ..record.results import CellResult


class RichProgress(PlainProgress):
    """A live bar (cells done/total, the cell running longest, ETA) for terminals; CI logs
    get plain lines instead. The ETA is the plain lines' (cell-timings.json's seconds,
    corrected as cells finish): rich's own, from the rate so far, swung 6:22 -> 15:32 for
    a run that took 3:01, its longest cells first."""

    heartbeat_s = 0.0  # the bar names what runs; no lines between its updates

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            Task,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.text import Text

        said = self

        class LiveEta(ProgressColumn):
            """The ETA as each frame is drawn: a field set only as a cell started or ended
            stood still through a torch extension's minutes of compiling."""

            def render(self, task: Task) -> Text:
                eta = said.eta()
                return Text(f"eta {said_duration(eta) if eta is not None else '-:--'}")

        self.console = console
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), LiveEta(),
                            console=console)
        self.task: TaskID | None = None

    def note(self, text: str) -> None:
        say(text, self.console)

    def start(self, total: int) -> None:
        super().start(total)
        self.bar.start()
        self.task = self.bar.add_task("cells", total=total)

    def cells_started(self, cell_ids: Iterable[str]) -> None:
        super().cells_started(cell_ids)
        self._update()

    def cell_done(self, result: CellResult) -> None:
        with self._lock:
            self.done += 1
            self._finished(result)
        result = self.settle(result)
        if result.outcome not in QUIET:
            # The message ended at a word to keep the row short; what the diagnosis says
            # beyond a bare status (progress.failure_said) whole after it, a measured
            # finding whole before it.
            said = shortened(log_line(result.message or result.reason), 120)
            beyond = said_beyond(result.message, result.diagnosis)
            said += f" — {beyond}" if beyond else ""
            finding = said_first(result.diagnosis)
            said = f"{finding} — {said}" if finding else said
            say(f"{result.outcome:>5}  {result.cell.id}: {said}", self.bar.console)
        if self.task is not None:
            self.bar.advance(self.task)
        self._update()

    def _update(self) -> None:
        """The bar's description: the cell running longest (the one a wait is on)."""
        if self.task is None:
            return
        with self._lock:
            running = min(self._running, key=self._running.__getitem__, default=None)
        self.bar.update(self.task, description=escape(log_line(running)) if running else "cells")

    def finish(self) -> None:
        super().finish()
        self.bar.stop()
