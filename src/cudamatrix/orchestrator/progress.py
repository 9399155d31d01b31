"""What a run says while it works: the plain-line version (CI logs, pipes); the CLI's
terminal bar builds on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..record.results import CellResult


def said_seconds(result: CellResult) -> str:
    """A cell's time as its line says it: a compile shared with its sibling archs is said
    to be shared (each cell's line showed the whole group's time as its own)."""
    compiled = next((s for s in result.stages if s.stage == "compile"), None)
    archs = compiled.built_with if compiled is not None else ()
    if len(archs) > 1:
        return f"{result.seconds:.1f}s, its compile shared by {len(archs)} archs"
    return f"{result.seconds:.1f}s"


class Progress:
    """What a run reports while it works; the CLI picks a terminal or a plain-line version.
    `settle` turns a cell's verdict into the one the summary counts (an xpass without a
    baseline is a fail): the line and the summary say the same."""

    settle: Callable[[CellResult], CellResult] = staticmethod(lambda result: result)

    def note(self, text: str) -> None:
        print(text, flush=True)

    def start(self, total: int) -> None:
        self.total, self.done = total, 0

    def cell_done(self, result: CellResult) -> None:
        self.done += 1
        shown = self.settle(result)
        print(f"[{self.done}/{self.total}] {shown.cell.id}: {shown.outcome} "
              f"({said_seconds(shown)})", flush=True)

    def finish(self) -> None:
        pass
