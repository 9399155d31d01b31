"""How long each cell took last time, kept in the cache, so a run starts its longest cells
first and none is left running alone at the end (a CUTLASS build of 314 s started last
made a 12-minute run out of an 8-minute one).

A cell never seen here is given what it cost on the reference machine, where the tool
ships that figure (config/data/cell-costs.json: the shipped corpus's cells, written by
`nox -s cell_costs` from a cold run), so a first run on a new machine starts its longest
cell first too (the CUTLASS-emitted PyTorch extension, 237 s, started late and made the
whole first run); else its frontend's guess (`Frontend.guess_s`: a project's build, a
CUTLASS GEMM or a PyTorch extension ahead of every kernel seen to take less, a CuTe DSL
compile ahead of an NVRTC one). The file is small
(one number per cell), bounded, and rewritten whole after each run; a damaged or
unwritable one is no timing, never an error. Each figure read is a number of seconds from
0 to a day: `1e308` in a damaged file was infinity once two cells were summed, which the
ETA could not say (a traceback at a terminal, a dead heartbeat in a CI log).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..common.files import write_atomic
from ..common.recorded import read_cache
from ..config.defaults import DATA
from ..config.options import Order
from ..config.plan import Cell
from ..record.results import CellResult
from ..stages.frontends import frontend

FILE = "cell-timings.json"
MAX_CELLS = 50_000
# The most a recorded cell is taken to cost: longer than any cell's limits let it run, and
# small enough that a run's cells summed stay a figure a clock can say.
MAX_SECONDS = 24 * 3600.0


COSTS_FILE = "cell-costs.json"


def _seconds(value: object) -> float | None:
    """A recorded value as seconds, at most MAX_SECONDS; None where it is no number of
    seconds (a 10^400 integer in a damaged file was an OverflowError at start; NaN,
    infinite or negative is no time)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, MAX_SECONDS)


def _all_seconds(data: object) -> dict[str, float]:
    """The cells' seconds of a timings document, each bounded; the rest passed over."""
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in ((k, _seconds(v)) for k, v in data.items()) if v is not None}


def shipped_costs() -> dict[str, float]:
    """What each cell of the shipped corpus cost on the reference machine (seconds), by
    cell id: empty where the file is missing or damaged (the guesses then stand)."""
    data = read_cache(DATA / COSTS_FILE)
    return _all_seconds(data.get("seconds") if isinstance(data, dict) else None)


def _key(cell: Cell) -> str:
    """The cell, wherever its results are merged (a runner's label left out)."""
    return cell.id.split("@")[0]


class CellTimings:
    def __init__(self, cache: Path, limits: Mapping[Cell, float] | None = None) -> None:
        """`limits`: the cells known to run to their limit, each with it (a hang the case
        declares, cell_jobs.runs_to_its_limit): what such a cell costs before it ran."""
        self.path = cache / FILE
        self.seconds: dict[str, float] = _all_seconds(read_cache(self.path))
        self.shipped = shipped_costs()
        self.limits = dict(limits or {})

    def guessed(self, cell: Cell) -> bool:
        """Whether the cell's expected seconds are only its frontend's guess (timed neither
        here nor on the reference machine, nor known to run to its limit): the ETA then
        learns its cost from the cells of its guess in this run instead of scaling the
        guess (orchestrator/eta.py)."""
        key = _key(cell)
        return key not in self.seconds and key not in self.shipped and cell not in self.limits

    @staticmethod
    def alike(cell: Cell) -> tuple[str, ...]:
        """The kinds of cell a never-timed cell is taken to cost like, most alike first:
        the cells of its case (the same source for another arch or toolkit), then of its
        frontend. Its guess is shared by frontends that cost nothing alike (a CuTe DSL
        compile of 4 s and an NVRTC one of 0.06 s are both guessed at 1 s)."""
        return (f"case:{cell.case}", f"frontend:{cell.frontend}")

    def expected(self, cell: Cell) -> float:
        """This machine's last cold time of the cell, else the reference machine's, else
        its limit where it is known to run to it, else its frontend's guess."""
        for known in (self.seconds.get(_key(cell)), self.shipped.get(_key(cell))):
            if known is not None:
                return known
        return max(frontend(cell.frontend).guess_s, self.limits.get(cell, 0.0))

    def schedule(self, cells: Sequence[Cell]) -> list[Cell]:
        """The cells, longest expected first (ties in plan order)."""
        return sorted(cells, key=lambda c: -self.expected(c))

    def schedule_groups(self, groups: Sequence[Sequence[Cell]]) -> list[Sequence[Cell]]:
        """Groups of cells built together (compile_strategy.arch_groups), the longest
        expected in all first (ties in the order given)."""
        return sorted(groups, key=lambda g: -sum(self.expected(c) for c in g))

    def in_order(self, groups: Sequence[Sequence[Cell]], order: Order) -> list[Sequence[Cell]]:
        """The groups in the order the run starts them (--order): `cost`, the longest
        expected first; `plan`, as planned; `reversed`, the plan's last first. One function
        the run calls, so the unit lane holds what each order does (a determinism check
        runs a plan reversed: no verdict may depend on which cell went first)."""
        if order == "cost":
            return self.schedule_groups(groups)
        return list(reversed(groups)) if order == "reversed" else list(groups)

    def record(self, results: Iterable[CellResult]) -> None:
        """Keep the seconds of the cells this run really ran (a cache hit says nothing
        of a cold run's cost, so it keeps what was there), less what each waited for its
        GPU's server: that wait is the run's crowding, not the cell's work (timed cells
        that waited out a hang were recorded at 25 s and started first the next run)."""
        for result in results:
            first = result.stages[0] if result.stages else None
            if first is not None and first.cache == "hit":
                continue
            waited = sum(_seconds(s.details.get("gpu_wait_s")) or 0.0 for s in result.stages)
            self.seconds[_key(result.cell)] = round(max(0.0, result.seconds - waited), 2)
        kept = dict(list(self.seconds.items())[-MAX_CELLS:])
        with contextlib.suppress(OSError):  # a cache that cannot be written costs an order
            write_atomic(self.path, json.dumps(kept))
