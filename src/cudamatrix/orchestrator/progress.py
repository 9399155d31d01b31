"""What a run says while it works: the plain-line version (CI logs, pipes); the CLI's
terminal bar builds on it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..record.results import CellResult


class Progress:
    """What a run reports while it works; the CLI picks a terminal or a plain-line version."""

    def note(self, text: str) -> None:
        print(text, flush=True)

    def start(self, total: int) -> None:
        self.total, self.done = total, 0

    def cell_done(self, result: CellResult) -> None:
        self.done += 1
        print(f"[{self.done}/{self.total}] {result.cell.id}: {result.outcome} "
              f"({result.seconds:.1f}s)", flush=True)

    def finish(self) -> None:
        pass
