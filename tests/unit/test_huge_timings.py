"""Issue 79, break 10: `1e308` seconds in cell-timings.json was a traceback before any cell
ran at a terminal (two such cells summed to infinity, which no clock can say), and in a CI
log it killed the heartbeat thread, so the log went silent for the rest of the run. Every
recorded second is bounded as it is read, the ETA never says a non-finite figure, and a
heartbeat that fails once keeps beating."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import pytest

from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.cell_timings import FILE, CellTimings
from cudamatrix.orchestrator.progress import Progress, said_duration


def _cell(case: str) -> Cell:
    return Cell(case, "v", "13.0", "sm_90", "nvrtc")


def test_a_huge_recorded_time_is_bounded_to_a_day(tmp_path: Path) -> None:
    (tmp_path / FILE).write_text(json.dumps({
        "a/v/13.0/sm_90": 1e308, "b/v/13.0/sm_90": 1e308, "c/v/13.0/sm_90": 5.0,
        "d/v/13.0/sm_90": 1e30}))
    timings = CellTimings(tmp_path)
    cells = [_cell(c) for c in "abcd"]
    day = 24 * 3600.0
    assert [timings.expected(c) for c in cells] == [day, day, 5.0, day]
    together = sum(timings.expected(c) for c in cells)
    assert math.isfinite(together)
    assert timings.schedule_groups([[cells[2]], cells[:2]]) == [cells[:2], [cells[2]]]


def test_non_finite_text_in_the_file_is_no_timing(tmp_path: Path) -> None:
    """Python's JSON reader takes Infinity and NaN, which JSON has not."""
    (tmp_path / FILE).write_text('{"a/v/13.0/sm_90": Infinity, "b/v/13.0/sm_90": NaN, '
                                 '"c/v/13.0/sm_90": -Infinity}')
    assert CellTimings(tmp_path).seconds == {}


def test_the_eta_of_huge_expectations_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress()
    progress.heartbeat_s = 0
    progress.start(3)
    progress.expect({"a": 1e308, "b": 1e308, "c": math.inf, "d": math.nan}, 2)
    progress.cells_started(["a"])
    eta = progress.eta()
    assert eta is not None and math.isfinite(eta)
    line = progress.running_line()
    assert line is not None and line.startswith("[0/3] running a; eta ")
    for seconds in (1e308, math.inf, -math.inf, math.nan, 1e20):
        said = said_duration(seconds)
        assert len(said) < 16, said
    assert said_duration(3661) == "1:01:01" and said_duration(181) == "3:01"


class _FailingOnce(Progress):
    """A progress whose running line fails the first time it is asked (a bug of tomorrow's
    in the line's making): the heartbeat must go on naming the running cells after it."""

    def __init__(self) -> None:
        self.asked = 0

    def running_line(self) -> str | None:
        self.asked += 1
        if self.asked == 1:
            raise OverflowError("cannot convert float infinity to integer")
        return super().running_line()


def test_a_heartbeat_that_fails_once_keeps_beating(capsys: pytest.CaptureFixture[str]) -> None:
    progress = _FailingOnce()
    progress.heartbeat_s = 0.01
    progress.start(1)
    died: list[threading.ExceptHookArgs] = []
    hook, threading.excepthook = threading.excepthook, died.append
    try:
        progress.expect({"a": 5.0}, 1)
        progress.cells_started(["a"])
        deadline = time.monotonic() + 30
        while progress.asked < 3 and time.monotonic() < deadline and not died:
            time.sleep(0.01)
        progress.finish()
    finally:
        threading.excepthook = hook
    assert not died, died[0].exc_value
    assert progress.asked >= 3
    captured = capsys.readouterr()
    assert "[0/1] running a; eta 0:05" in captured.out
    # Said once, on stderr, as every warning is: not once a beat.
    assert captured.err.count("warning: ") == 1, captured.err
    assert "OverflowError" in captured.err or "infinity" in captured.err
