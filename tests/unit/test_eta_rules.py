"""Each of the ETA's rules held exactly, one small state each (issue 80: mistakes made by a
reviewer who had not read the tests). tests/unit/test_eta.py holds whole simulated runs to
the truth within 25%; a rule broken inside that margin got past it: a cell past its record
said to have a second left, a cell of this run's own measure scaled or teaching the speed,
a skip or a cell recorded at 0 s counted as evidence, a never-timed cell taken at its guess's
cells before its own case's, a group built together counted as separate pieces, the
reference machine's figure taken over this machine's."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.cell_timings import CellTimings
from cudamatrix.orchestrator.eta import (
    MIN_LEFT_S,
    OVERRUN_SHARE,
    RunningCell,
    RunState,
    eta_seconds,
    speed,
    towards_record,
)
from cudamatrix.orchestrator.progress import Progress
from cudamatrix.record.outcomes import Outcome
from cudamatrix.record.results import CellResult
from cudamatrix.stages.cell.result import StageResult


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _progress(workers: int, seconds: dict[str, float],
              guessed: dict[str, tuple[str, ...]] | None = None) -> tuple[Progress, _Clock]:
    clock = _Clock()
    progress = Progress()
    progress.clock, progress.heartbeat_s, progress.verbosity = clock, 0.0, -1
    progress.start(len(seconds))
    progress.expect(seconds, workers, guessed=guessed)
    return progress, clock


def _done(progress: Progress, clock: _Clock, cell_id: str, seconds: float,
          outcome: Outcome = "pass") -> None:
    """The cell started now and finished `seconds` later, on the test's clock."""
    progress.cells_started([cell_id])
    clock.now += seconds
    case, variant, toolkit, arch = cell_id.split("/")
    progress.cell_done(CellResult(
        cell=Cell(case, variant, toolkit, arch, "nvrtc"), outcome=outcome, stage="compile",
        reached="compile", message="", reason="", expected="", diagnosis=None,
        stages=(StageResult("compile", "ok"),), seconds=seconds))


def test_a_cell_past_its_record_has_a_share_of_its_overrun_still_to_go() -> None:
    """Recorded 10 s, running 30 s: its due at the speed it shows (it is itself evidence of
    a slower machine), then half its overrun past that still to go, not the floor of a
    second (a torch extension's five minutes showed 0:00 ten times)."""
    state = RunState((), (RunningCell(10.0, 30.0),), 0.0, 0.0, 0, 1)
    due = 10.0 * speed(state)
    assert due < 30.0
    assert OVERRUN_SHARE * (30.0 - due) > MIN_LEFT_S
    assert eta_seconds(state) == pytest.approx(OVERRUN_SHARE * (30.0 - due))


def test_a_cell_of_this_runs_own_measure_is_not_scaled_by_the_speed() -> None:
    """A never-timed cell running at what its kind took in this run (measured) is already
    at this machine's speed: the finished cells' 2x slower must not double it again."""
    state = RunState((), (RunningCell(10.0, 0.0, measured=True),), 10.0, 20.0, 5, 1)
    assert speed(state) > 1.5
    assert eta_seconds(state) == pytest.approx(10.0)


def test_a_cell_of_this_runs_own_measure_running_long_teaches_no_speed() -> None:
    """A measured cell past its figure says its kind guessed short, not that the machine
    is slow: the recorded cells still to start keep their record."""
    state = RunState((10.0,), (RunningCell(1.0, 50.0, measured=True),), 0.0, 0.0, 0, 2)
    assert speed(state) == 1.0
    assert eta_seconds(state) == pytest.approx(OVERRUN_SHARE * 49.0)


def test_a_skipped_cell_teaches_neither_the_speed_nor_its_kind() -> None:
    """A skip ends in 0 s: a recorded cell skipped is no evidence that the machine is fast,
    a guessed one none that its kind costs nothing."""
    progress, clock = _progress(1, {"a/v/13.0/sm_80": 10.0, "b/v/13.0/sm_80": 10.0})
    _done(progress, clock, "a/v/13.0/sm_80", 0.0, outcome="skip")
    assert progress.eta() == pytest.approx(10.0)
    kinds = {c: ("case:k",) for c in ("k/x/13.0/sm_80", "k/y/13.0/sm_80")}
    progress, clock = _progress(1, dict.fromkeys(kinds, 4.0), guessed=kinds)
    _done(progress, clock, "k/x/13.0/sm_80", 0.0, outcome="skip")
    assert progress.eta() == pytest.approx(4.0)


def test_a_cell_recorded_at_0_s_is_not_a_cell_that_showed_the_speed() -> None:
    """How far a slower speed is trusted depends on how many cells showed it; one recorded
    at 0 s (a cache hit last time) showed nothing."""
    progress, clock = _progress(1, {"z/v/13.0/sm_80": 0.0, "a/v/13.0/sm_80": 10.0,
                                    "b/v/13.0/sm_80": 100.0})
    _done(progress, clock, "z/v/13.0/sm_80", 5.0)
    _done(progress, clock, "a/v/13.0/sm_80", 20.0)
    assert progress.eta() == pytest.approx(100.0 * towards_record(25.0 / 10.0, 1))


def test_a_never_timed_cell_is_taken_at_its_own_cases_cells_first() -> None:
    """Five cells guessed at 1 s: case X's first took 4 s, case Y's two 0.06 s. X's two
    left cost 4 s each (its case), not the 1.37 s mean of every cell of the guess."""
    ids = {"x1": "X", "x2": "X", "x3": "X", "y1": "Y", "y2": "Y"}
    cells = {f"{c}/v/13.0/sm_80": case for c, case in ids.items()}
    guessed = {cell: (f"case:{case}", "frontend:nvrtc") for cell, case in cells.items()}
    progress, clock = _progress(1, dict.fromkeys(cells, 1.0), guessed=guessed)
    for cell_id, seconds in (("x1/v/13.0/sm_80", 4.0), ("y1/v/13.0/sm_80", 0.06),
                             ("y2/v/13.0/sm_80", 0.06)):
        _done(progress, clock, cell_id, seconds)
    assert progress.eta() == pytest.approx(8.0)


def test_cells_taken_up_together_are_one_piece_of_one_workers_work() -> None:
    """Two archs of one compile (20 s recorded together) on one of two workers: 20 s to
    go, not two 10 s pieces placed on both workers."""
    progress, _ = _progress(2, {"g/v/13.0/sm_80": 10.0, "g/v/13.0/sm_90": 10.0})
    progress.cells_started(["g/v/13.0/sm_80", "g/v/13.0/sm_90"])
    assert progress.eta() == pytest.approx(20.0)


def test_this_machines_own_time_wins_over_the_reference_machines(tmp_path: Path) -> None:
    """A cell timed here is expected at that, whatever the shipped costs say of it."""
    cell = Cell("k", "v", "13.0", "sm_90", "nvcc")
    timings = CellTimings(tmp_path)
    timings.seconds = {"k/v/13.0/sm_90": 5.0}
    timings.shipped = {"k/v/13.0/sm_90": 200.0}
    assert timings.expected(cell) == 5.0
