"""What a run says while it works: the plain-line version (CI logs, pipes); the CLI's
terminal bar builds on it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..stages.cell.result import TOGETHER_SECONDS

if TYPE_CHECKING:
    from ..record.results import CellResult


def said_seconds(result: CellResult) -> str:
    """A cell's time as its line says it: a compile shared with its sibling archs is said
    to be shared (each cell's line showed the whole group's time as its own)."""
    compiled = next((s for s in result.stages if s.stage == "compile"), None)
    archs = compiled.built_with if compiled is not None else ()
    if compiled is not None and len(archs) > 1:
        whole = compiled.details.get(TOGETHER_SECONDS)
        said = f"{float(whole):.1f}s" if isinstance(whole, int | float) else "its time"
        return (f"{result.seconds:.1f}s, its share of one compile of {len(archs)} archs "
                f"({said})")
    return f"{result.seconds:.1f}s"


class Progress:
    """What a run reports while it works; the CLI picks a terminal or a plain-line version.
    `settle` turns a cell's verdict into the one the summary counts (an xpass without a
    baseline is a fail): the line and the summary say the same."""

    settle: Callable[[CellResult], CellResult] = staticmethod(lambda result: result)
    # -q (-1): only the cells that failed or erred, and warnings; -v (1): each such cell's
    # message too. Warnings go to stderr, as errors do.
    verbosity: int = 0

    def note(self, text: str) -> None:
        if text.startswith("warning:"):
            print(text, file=sys.stderr, flush=True)
        elif self.verbosity >= 0:
            print(text, flush=True)

    def start(self, total: int) -> None:
        self.total, self.done = total, 0

    def cell_done(self, result: CellResult) -> None:
        self.done += 1
        shown = self.settle(result)
        failed = shown.outcome in ("fail", "error")
        if self.verbosity < 0 and not failed:
            return
        print(f"[{self.done}/{self.total}] {shown.cell.id}: {shown.outcome} "
              f"({said_seconds(shown)})", flush=True)
        if self.verbosity > 0 and failed and (shown.message or shown.reason):
            print(f"    {(shown.message or shown.reason)[:2000]}", flush=True)

    def finish(self) -> None:
        pass
