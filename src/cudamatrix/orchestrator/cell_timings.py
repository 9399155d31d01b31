"""How long each cell took last time, kept in the cache, so a run starts its longest cells
first and none is left running alone at the end (a CUTLASS build of 314 s started last
made a 12-minute run out of an 8-minute one).

A cell never seen is given its frontend's guess: a slow frontend's (CUTLASS, a project's
build) ahead of every kernel seen to take less, a kernel's behind. The file is small
(one number per cell), bounded, and rewritten whole after each run; a damaged or
unwritable one is no timing, never an error.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..config.plan import Cell
from ..record.results import CellResult
from ..stages.frontends import frontend

FILE = "cell-timings.json"
MAX_CELLS = 50_000
# Seconds guessed for a cell never timed: slow frontends first, as before any timing.
GUESS_SLOW_S = 120.0
GUESS_S = 1.0


def _key(cell: Cell) -> str:
    """The cell, wherever its results are merged (a runner's label left out)."""
    return cell.id.split("@")[0]


class CellTimings:
    def __init__(self, cache: Path) -> None:
        self.path = cache / FILE
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            data = {}
        self.seconds: dict[str, float] = {
            str(k): float(v) for k, v in (data.items() if isinstance(data, dict) else ())
            if isinstance(v, int | float) and v >= 0}

    def expected(self, cell: Cell) -> float:
        known = self.seconds.get(_key(cell))
        if known is not None:
            return known
        return GUESS_SLOW_S if frontend(cell.frontend).slow else GUESS_S

    def schedule(self, cells: Sequence[Cell]) -> list[Cell]:
        """The cells, longest expected first (ties in plan order)."""
        return sorted(cells, key=lambda c: -self.expected(c))

    def schedule_groups(self, groups: Sequence[Sequence[Cell]]) -> list[Sequence[Cell]]:
        """Groups of cells built together (runner.arch_groups), the longest expected in all
        first (ties in the order given)."""
        return sorted(groups, key=lambda g: -sum(self.expected(c) for c in g))

    def record(self, results: Iterable[CellResult]) -> None:
        """Keep the seconds of the cells this run really ran (a cache hit says nothing
        of a cold run's cost, so it keeps what was there)."""
        for result in results:
            first = result.stages[0] if result.stages else None
            if first is not None and first.details.get("cache") == "hit":
                continue
            self.seconds[_key(result.cell)] = round(result.seconds, 2)
        kept = dict(list(self.seconds.items())[-MAX_CELLS:])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{FILE}.")
            with os.fdopen(handle, "w") as stream:
                json.dump(kept, stream)
            os.replace(temporary, self.path)
        except OSError:
            pass
