"""When a run should end, from what each cell cost last time (cell-timings.json), as a pure
function of the run's state at one moment, so a simulated run can hold it to the truth.

What it corrects, and why each: the machine's speed against the record, learnt from the
cells finished and from the cells running past their record (a cell still running is no
faster than it has been, and the slow ones are the last to finish: the finished alone said
a loaded laptop was quick), drawn towards the record while only a few cells have shown a
slower one (the first builds of a run slowed by a passing load, the rest at the record,
made the ETA 30% over at a third); a running cell past its expectation still has time to
go (it counted 0, and a torch extension's five minutes read 0:00 ten times); and the
workers, by placing the cells still to start on them longest first as the run does (a sum
over the workers said 0:17 where one long cell had 79 s to go). A cell never timed is
given its frontend's guess, which is no machine's record: its cost is `measured` (what the
finished cells of its case took in this run, else those of its frontend, else those of its
guess, else the guess: progress.py), never scaled by the speed nor teaching it (a first
run's builds guessed at 120 s that took 8 made every kernel guessed at 1 s cost 0.07, and
the ETA said 0:17 with 35 s left). A skipped cell teaches nothing: eight nvcc cells of a
toolkit without nvcc, done in 0 s, made every cell guessed alike cost 0 s (0:05 said with
15 s left).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass

# How far this machine's speed may be taken to differ from the record (a run of cache
# hits is far faster than the cold times recorded; a first cell's luck is not the run's).
SPEED_BOUNDS = (0.05, 20.0)
# A running cell past its expectation is given this share of its overrun still to go, and
# never less than MIN_LEFT_S: the longer it has overrun, the further it is from done.
OVERRUN_SHARE = 0.5
MIN_LEFT_S = 1.0
# How many cells the record counts for against a slower speed this run has shown. Measured
# on this project's shared 2-core machine (42 cells recorded, then run again under others'
# load): a cell's ratio to its record strays from its run's by 0.2-0.4 in the logarithm,
# a run's own ratio from 1 by about 0.35 (1.2 to 1.6 times slower), so the record is worth
# about one cell; a little less, as a machine really 1.6 times slower whose ETA a third in
# stands on two finished cells must still be within 25% (tests/unit/test_eta.py).
RECORD_CELLS = 0.75


@dataclass(frozen=True)
class RunningCell:
    """A cell on a worker now: its recorded seconds and how long it has run; `measured`
    where its seconds are this run's own figure for it, not a record to scale."""

    expected: float
    elapsed: float
    measured: bool = False


@dataclass(frozen=True)
class RunState:
    """What the ETA is made of at one moment: the recorded seconds of the cells still to
    start, the cells running, the finished cells' recorded and real seconds summed and how
    many cells those are (each recorded above 0 s: how far their speed is trusted), and how
    many cells run at once; `measured`, the seconds of cells still to start that this run
    has measured for them (never timed: what their guess's cells took here)."""

    queued: tuple[float, ...]
    running: tuple[RunningCell, ...]
    finished_expected: float
    finished_actual: float
    finished_cells: int
    workers: int
    measured: tuple[float, ...] = ()


def speed(state: RunState) -> float:
    """Real seconds per recorded second on this machine now: the finished cells' ratio,
    raised by each running cell already past its record at that ratio, counted at what it
    has taken so far (a lower bound of its cost: it may only raise the ratio, never lower
    it, as a cell not yet past its due says nothing yet); a slower ratio is then drawn
    towards the record by how few cells have shown it (`towards_record`): those finished
    and those running past their record."""
    low, high = SPEED_BOUNDS
    expected, actual = state.finished_expected, state.finished_actual
    known = min(high, max(low, actual / expected)) if expected > 0 else 1.0
    cells = state.finished_cells
    for cell in (c for c in state.running if not c.measured):
        if cell.elapsed > cell.expected * known:
            expected, actual = expected + cell.expected, actual + cell.elapsed
        if cell.elapsed > cell.expected:
            cells += 1
    if expected <= 0:
        return 1.0
    return towards_record(min(high, max(low, actual / expected)), cells)


def towards_record(ratio: float, cells: int) -> float:
    """A ratio slower than the record, as far from it as `cells` cells can show: its
    logarithm weighed cells / (cells + RECORD_CELLS), so one cell's is drawn almost half
    way back and ten cells' hardly. A few cells slow together are as often a passing load
    as a slower machine; a ratio faster than the record is taken as it is, as it is mostly
    caches answering (the record keeps cold times), which lasts the run."""
    if ratio <= 1.0:
        return ratio
    return float(math.exp(math.log(ratio) * cells / (cells + RECORD_CELLS)))


def time_left(cell: RunningCell, rate: float) -> float:
    """A running cell's seconds still to go: its record at this speed less what it has run,
    or, past that, a share of its overrun; never under MIN_LEFT_S (it has not ended)."""
    due = cell.expected * (1.0 if cell.measured else rate)
    return max(due - cell.elapsed, OVERRUN_SHARE * (cell.elapsed - due), MIN_LEFT_S)


def _placed(workers: int, running: Iterable[float], queued: Iterable[float]) -> float:
    """When the last worker is free: the running cells' time left first, then the cells to
    start, longest first, each on the worker free soonest (as the run hands them out)."""
    free = [0.0] * max(1, workers)
    for seconds in (*sorted(running, reverse=True), *sorted(queued, reverse=True)):
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def eta_seconds(state: RunState) -> float:
    """Seconds until the run should end; more than 0 while a cell runs."""
    rate = speed(state)
    return _placed(state.workers, (time_left(c, rate) for c in state.running),
                   (*(s * rate for s in state.queued), *state.measured))
