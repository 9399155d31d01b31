"""What a run says while it works: the plain-line version (CI logs, pipes); the CLI's
terminal bar builds on it.

A CI log is read after the fact, by someone who cannot re-run with -v: each failing
cell's line carries its decisive message, whole, on that one line (so a grep for the
cell finds its reason), and every `heartbeat_s` a line names the cells running and when
the run should end (the bar once sat at 7/114 for 40 s with nothing said). What the ETA is
made of is bounded as it is taken (a damaged timings file's `1e308` summed to infinity,
which no clock says), and a heartbeat that fails once keeps beating: a thread that dies
leaves a CI log silent for the rest of the run, which reads as a hang."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ..common.log_line import say
from ..record.diagnose import said_beyond, said_first
from ..record.outcomes import FAILING, NOT_RUN
from ..stages.cell.result import TOGETHER_SECONDS
from .eta import RunningCell, RunState, eta_seconds

if TYPE_CHECKING:
    from ..record.results import CellResult

# How often the plain lines name the cells running (seconds); a CI log stays readable.
HEARTBEAT_S = 30.0
# How many running cells a line names; the rest are counted.
NAMED_RUNNING = 3
# The most a cell is expected to take (seconds): a week, longer than any run is let run.
MAX_EXPECTED_S = 7 * 24 * 3600.0
# The longest duration a line says (999 hours): beyond it a figure says nothing more.
MAX_SAID_S = 999 * 3600.0 + 59 * 60 + 59


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


def failure_said(result: CellResult) -> str:
    """A failing cell's words on its one line: its decisive message, whole, then where that
    is only a status (NVRTC_ERROR_COMPILATION) what the diagnosis knows beyond it, its
    title: the tool's own words where they say more than the compiler's. A finding the run
    measured ("dequant works from sm_80 on") comes first, the compiler's words after."""
    said = result.message or result.reason
    finding = said_first(result.diagnosis)
    if finding:
        return f"{finding} — {said}"
    beyond = said_beyond(result.message, result.diagnosis)
    return f"{said} — {beyond}" if beyond else said


def _expected_seconds(seconds: float) -> float:
    """A cell's expected seconds as the ETA takes them: from 0 to MAX_EXPECTED_S (NaN as
    0), so the remaining cells summed stay finite."""
    return 0.0 if math.isnan(seconds) else min(MAX_EXPECTED_S, max(0.0, seconds))


def said_duration(seconds: float) -> str:
    """Seconds as a clock says them: 3:01, 1:02:03; a figure no clock holds (NaN, infinite)
    is said as unknown and a huge one as the longest said, never an OverflowError."""
    if math.isnan(seconds):
        return "-:--"
    whole = round(min(MAX_SAID_S, max(0.0, seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """What a run reports while it works; the CLI picks a terminal or a plain-line version.
    `settle` turns a cell's verdict into the one the summary counts (an xpass without a
    baseline is a fail): the line and the summary say the same."""

    settle: Callable[[CellResult], CellResult] = staticmethod(lambda result: result)
    # -q (-1): only the cells that failed or erred, and warnings; 0: every cell, the
    # failing ones with their message, and the running cells now and then.
    verbosity: int = 0
    heartbeat_s: float = HEARTBEAT_S
    clock: Callable[[], float] = staticmethod(time.monotonic)

    def note(self, text: str) -> None:
        if text.startswith("warning:"):
            say(text, stderr=True)
        elif self.verbosity >= 0:
            say(text)

    def start(self, total: int) -> None:
        self.total, self.done = total, 0
        self._lock = threading.Lock()  # cells finish on the pool's threads
        self._expected: dict[str, float] = {}
        self._running: dict[str, float] = {}  # cell id: when it started
        self._taken: dict[str, int] = {}  # cell id: which taking-up started it (eta)
        self._takings = 0
        self._workers = 1
        self._timed = [0.0, 0.0]  # finished cells' expected and real seconds
        self._timed_cells = 0  # how many of them, each recorded above 0 s
        # Cells never timed (their seconds a guess): the kinds each is like, most alike first.
        self._guessed: dict[str, tuple[str, ...]] = {}
        self._by_kind: dict[str, list[float]] = {}  # a kind: its finished cells' seconds
        self._said_running = self.clock()
        self._stop = threading.Event()

    def expect(self, seconds: Mapping[str, float], workers: int,
               guessed: Mapping[str, tuple[str, ...]] | None = None) -> None:
        """What the ETA is made of: the seconds each cell still to run took last time
        (cell-timings.json), by cell id, and how many cells run at once; `guessed`, the
        cells never timed, whose seconds are their frontend's guess, each with the kinds
        of cell it is like, most alike first (its case, its frontend: eta.py takes it at
        what the finished cells of its first kind with one took in this run, else of its
        guess). Starts the heartbeat that names the running cells (the plain lines only)."""
        with self._lock:
            self._expected = {c: _expected_seconds(s) for c, s in seconds.items()}
            self._guessed = {c: tuple(k) for c, k in (guessed or {}).items()
                             if c in self._expected}
            self._workers = max(1, workers)
        if self.heartbeat_s > 0 and self.verbosity >= 0:
            threading.Thread(target=self._beat, name="progress-heartbeat", daemon=True).start()

    def cells_started(self, cell_ids: Iterable[str]) -> None:
        """Cells a worker took up now (a group built together starts at once)."""
        now = self.clock()
        with self._lock:
            self._takings += 1
            for cell_id in cell_ids:
                self._running[cell_id] = now
                self._taken[cell_id] = self._takings

    def cell_done(self, result: CellResult) -> None:
        shown = self.settle(result)
        with self._lock:
            self.done += 1
            self._finished(result)
            failed = shown.outcome in FAILING
            if self.verbosity < 0 and not failed:
                return
            # Its message whole, folded into the cell's one line (say): a grep for the
            # cell finds its reason, and the end of a message is often what decides.
            said = failure_said(shown) if failed else ""
            say(f"[{self.done}/{self.total}] {shown.cell.id}: {shown.outcome} "
                f"({said_seconds(shown)})" + (f": {said}" if said.strip() else ""))
        self.tick()

    def _finished(self, result: CellResult) -> None:
        """A cell off the running list; its time against its expectation teaches the
        ETA this machine's speed."""
        began = self._running.pop(result.cell.id, None)
        self._taken.pop(result.cell.id, None)
        expected = self._expected.pop(result.cell.id, None)
        if began is None or expected is None or result.outcome in NOT_RUN:
            return  # a skipped cell's 0 s made its kind's cells cost 0 s (-66% two thirds in)
        if result.cell.id in self._guessed:
            for kind in self._kinds(result.cell.id, expected):
                self._by_kind.setdefault(kind, []).append(result.seconds)
        else:
            self._timed[0] += expected
            self._timed[1] += result.seconds
            self._timed_cells += 1 if expected > 0 else 0

    def eta(self) -> float | None:
        """Seconds until the run should end (eta.py: the cells still to start placed on the
        workers after the running cells' time left, at the speed this run has shown against
        the record); None before `expect`."""
        with self._lock:
            return self._eta()

    def _eta(self) -> float | None:
        if not self._expected:
            return None if not (self._timed[0] or self._by_kind) else 0.0
        now = self.clock()
        # The cells a worker took up at once (a group built by one compile) are one piece
        # of its work: their records summed against the time the group has run.
        together: dict[int, RunningCell] = {}
        for cell_id, began in self._running.items():
            if cell_id in self._expected:
                key, had = self._taken[cell_id], together.get(self._taken[cell_id])
                alike = cell_id in self._guessed and (had is None or had.measured)
                together[key] = RunningCell((had.expected if had else 0.0)
                                            + self._seconds(cell_id), now - began, alike)
        running = tuple(together.values())
        waiting = [c for c in self._expected if c not in self._running]
        queued = tuple(self._expected[c] for c in waiting if c not in self._guessed)
        measured = tuple(self._seconds(c) for c in waiting if c in self._guessed)
        return eta_seconds(RunState(queued, running, self._timed[0], self._timed[1],
                                    self._timed_cells, self._workers, measured))

    def _kinds(self, cell_id: str, expected: float) -> tuple[str, ...]:
        """The kinds a never-timed cell is like, most alike first, its guess's last (cells
        of one frontend guessed alike: a CuTe DSL compile and an NVRTC one are both 1 s)."""
        return (*self._guessed[cell_id], f"guess:{expected!r}")

    def _seconds(self, cell_id: str) -> float:
        """A cell's seconds for the ETA: its record, or for a cell never timed the mean of
        what the finished cells of the most alike of its kinds took in this run (the
        guess until one has finished)."""
        expected = self._expected[cell_id]
        if cell_id not in self._guessed:
            return expected
        for kind in self._kinds(cell_id, expected):
            seen = self._by_kind.get(kind)
            if seen:
                return sum(seen) / len(seen)
        return expected

    def running_line(self) -> str | None:
        """The cells running now, longest-running first, and the ETA: None when none runs."""
        with self._lock:
            if not self._running:
                return None
            names = sorted(self._running, key=self._running.__getitem__)
            eta = self._eta()
            more = len(names) - NAMED_RUNNING
            listed = ", ".join(names[:NAMED_RUNNING]) + (f" and {more} more" if more > 0 else "")
            return (f"[{self.done}/{self.total}] running {listed}"
                    + (f"; eta {said_duration(eta)}" if eta is not None else ""))

    def tick(self) -> None:
        """Names the running cells where `heartbeat_s` has passed since that was last said
        (called by the heartbeat and after each cell's line)."""
        if self.verbosity < 0 or self.heartbeat_s <= 0 \
                or self.clock() - self._said_running < self.heartbeat_s:
            return
        line = self.running_line()
        if line is not None:
            self._said_running = self.clock()
            self.note(line)

    def _beat(self) -> None:
        """The heartbeat's thread. A line it cannot make is warned of once and the beat goes
        on: an exception here ended the thread, silently, and the log said nothing more
        until the run ended."""
        warned = False
        while not self._stop.wait(self.heartbeat_s):
            try:
                self.tick()
            except Exception as exc:  # any failure: the beat must go on
                if not warned:
                    warned = True
                    self.note(f"warning: the progress heartbeat could not say what runs "
                              f"({type(exc).__name__}: {exc}); it goes on")

    def finish(self) -> None:
        if hasattr(self, "_stop"):
            self._stop.set()
