"""Issue 70, point 3: every log says why. Without a terminal (every CI log) a failing
cell's line carries its decisive message, whole, on that one line; now and then a line
names the cells running and an ETA made of cell-timings.json's seconds, which converges;
-q keeps only the failures."""

from __future__ import annotations

import pytest

from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.progress import Progress
from cudamatrix.record.outcomes import Outcome
from cudamatrix.record.results import CellResult

SMEM = ("ptxas error   : Entry function '_Z3bigPf' uses too much shared data (0xc010 bytes, "
        "0xc000 max)")


def _result(case: str, outcome: Outcome, seconds: float, message: str = "") -> CellResult:
    return CellResult(cell=Cell(case, "nvrtc", "13.0", "sm_80", "nvrtc"), outcome=outcome,
                      stage="compile", reached="compile", message=message, reason="",
                      expected="", diagnosis=None, stages=(), seconds=seconds)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _progress(clock: _Clock, verbosity: int = 0) -> Progress:
    progress = Progress()
    progress.clock = clock
    progress.heartbeat_s = 30.0
    progress.verbosity = verbosity
    return progress


def test_a_failing_cells_line_carries_its_whole_message_folded_to_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    progress = _progress(_Clock())
    progress.heartbeat_s = 0
    progress.start(2)
    progress.cell_done(_result("ok", "pass", 0.2))
    long = SMEM + " and then " + "a long explanation " * 20 + "that ends here"
    progress.cell_done(_result("smem-big", "fail", 0.1, long.replace(" and then ", "\n  ")))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[1/2] ok/nvrtc/13.0/sm_80: pass (0.2s)"
    assert lines[1] == ("[2/2] smem-big/nvrtc/13.0/sm_80: fail (0.1s): "
                        + long.replace(" and then ", " "))
    assert len(lines) == 2


def test_running_cells_are_named_with_an_eta_that_converges(
        capsys: pytest.CaptureFixture[str]) -> None:
    clock = _Clock()
    progress = _progress(clock)
    progress.start(4)
    # Recorded last time: 100, 60, 40 and 20 s; two workers.
    progress.expect({f"{c}/nvrtc/13.0/sm_80": s
                     for c, s in (("a", 100.0), ("b", 60.0), ("c", 40.0), ("d", 20.0))}, 2)
    # 100 and 60 on the two workers, 40 after the 60, 20 after the 100: 120 s.
    assert progress.eta() == 120.0
    progress.cells_started(["a/nvrtc/13.0/sm_80"])  # two workers take a cell each
    progress.cells_started(["b/nvrtc/13.0/sm_80"])
    clock.now += 31  # the heartbeat names what runs
    progress.tick()
    assert capsys.readouterr().out == ("[0/4] running a/nvrtc/13.0/sm_80, b/nvrtc/13.0/sm_80; "
                                       "eta 1:29\n")
    ends = [clock.now + (progress.eta() or 0)]
    # This machine runs at half the recorded speed: b ends at 1120, a and c at 1200, and d,
    # started then, at 1240. One cell twice its record may be a passing load: the ETA
    # takes the speed it shows only in part (eta.towards_record), three cells nearly whole.
    clock.now = 1120.0
    progress.cell_done(_result("b", "pass", 120.0))
    progress.cells_started(["c/nvrtc/13.0/sm_80"])
    ends.append(clock.now + (progress.eta() or 0))
    clock.now = 1200.0
    progress.cell_done(_result("a", "pass", 200.0))
    progress.cell_done(_result("c", "pass", 80.0))
    progress.cells_started(["d/nvrtc/13.0/sm_80"])
    ends.append(clock.now + (progress.eta() or 0))
    off = [abs(1240 - end) for end in ends]
    assert off[0] == 120 and off[0] > off[1] > off[2] and off[2] <= 0.25 * 40, ends
    out = capsys.readouterr().out
    assert "[1/4] running a/nvrtc/13.0/sm_80; eta 1:19" in out, out
    clock.now = 1240.0
    progress.cell_done(_result("d", "pass", 40.0))
    assert progress.eta() == 0.0 and progress.running_line() is None
    assert capsys.readouterr().out == "[4/4] d/nvrtc/13.0/sm_80: pass (40.0s)\n"
    progress.finish()


def test_quiet_keeps_only_the_failures(capsys: pytest.CaptureFixture[str]) -> None:
    clock = _Clock()
    progress = _progress(clock, verbosity=-1)
    progress.start(2)
    progress.expect({"a/nvrtc/13.0/sm_80": 5.0, "b/nvrtc/13.0/sm_80": 5.0}, 1)
    progress.note("preparing toolkit 13.0")
    progress.cells_started(["a/nvrtc/13.0/sm_80"])
    clock.now += 60
    progress.tick()
    progress.cell_done(_result("a", "pass", 1.0))
    progress.cell_done(_result("b", "error", 1.0, "the worker died\n(signal 9)"))
    progress.finish()
    assert capsys.readouterr().out == (
        "[2/2] b/nvrtc/13.0/sm_80: error (1.0s): the worker died (signal 9)\n")


def test_a_live_bar_says_only_the_cells_a_reader_must_act_on() -> None:
    """The terminal's live bar (commands/progress_bar.py) prints a line for a cell whose
    outcome asks something of its reader (a failure, an error, a pass where a failure was
    expected) and keeps quiet of the rest, a skip among them: on a GPU-less machine every
    cell's GPU stages are skipped, and a line each would bury the failures."""
    from io import StringIO

    from rich.console import Console

    from cudamatrix.commands.progress_bar import RichProgress

    written = StringIO()
    bar = RichProgress(Console(file=written, width=200))
    outcomes: tuple[Outcome, ...] = ("pass", "xfail", "skip", "fail", "error")
    bar.start(len(outcomes))
    for outcome in outcomes:
        bar.cell_done(_result(outcome, outcome, 1.0, f"it said {outcome}"))
    bar.bar.stop()
    said = {line.split()[0] for line in written.getvalue().splitlines()
            if "/nvrtc/13.0/sm_80: it said " in line}
    assert said == {"fail", "error"}, written.getvalue()
