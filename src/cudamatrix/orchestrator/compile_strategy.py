"""How the cells that differ only in arch are compiled, chosen from the machine's cores
(issue 72): one nvcc for every arch (`grouped`: the host pass, most of a CUTLASS build's
front end, paid once), that one nvcc running its archs side by side (`threads`: nvcc's own
``--threads``), or one nvcc per arch (`apart`: each a cell of its own in the pool).

Neither is right everywhere. On 16 cores CuTe's sgemm_sm80 tutorial for five archs took
102.6 s as one nvcc, 50.0 s with ``--threads 5`` and 25.3 s as five nvccs side by side
(24.2 s for one arch alone): grouped, that one compile was the whole cold run while 15
cores waited. On 2 cores the five separate compiles cost about 20% more CPU than the one
grouped, and every core is busy anyway. So `auto` decides twice:

* when the run is scheduled (`split_critical`): a group whose grouped compile would
  outlast the run's share of the work per core (the expected compile seconds of every
  cell, over the cores) is split into its cells, each compiled alone, where the split
  shortens the run by the model below; every other group stays grouped;
* when a group's compile starts (`CompileCores.group_compile`): it gets ``--threads k``
  for the k cores idle at that moment (one for itself and one per idle core, at most one
  per arch), so a group left to compile at the run's end does not run its archs one
  after another while the other cores wait.

``--split-compile`` is not used: nvcc's help says it may change the code it makes
("minimal (if any) impact on performance"), and a compile's key, which the strategy never
enters, must stand for one build (it gained 2 s of 50 in the issue's measurement).

The compile key never depends on the strategy (Job.threads is declared AFTER_COMPILE),
and a group's verdict per arch is the single-arch one whatever ran (nvcc.compile_together
splits a threaded build's output only where each line's arch is certain, else builds the
group again one arch after another; tests/e2e/test_compile_together.py compares them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

from packaging.version import InvalidVersion, Version

from ..config.options import CompileStrategy, RunOptions
from ..config.plan import Cell
from ..record.diagnose import option_releases
from ..stages.cell.job import Job
from ..stages.frontends import frontend

# What one arch's compile alone costs, against its share of the group's one compile:
# the host pass is paid once per arch (five nvccs of sgemm_sm80 took about 20% more CPU
# than one nvcc of the five archs, issue 72).
SPLIT_COST = 1.2
THREADS_OPTION = "--threads"


def arch_groups(cells: Sequence[Cell]) -> list[list[Cell]]:
    """The cells that differ only in arch, together (in the order of their first cell):
    one compile can build them (compile_together); every other cell alone."""
    groups: dict[Cell, list[Cell]] = {}
    for cell in cells:
        shares = frontend(cell.frontend).compile_together is not None
        groups.setdefault(replace(cell, arch="") if shares else cell, []).append(cell)
    return list(groups.values())


def compile_groups(cells: Sequence[Cell], strategy: CompileStrategy,
                   expected: Callable[[Cell], float], cores: int) -> list[list[Cell]]:
    """The run's units of work: every cell alone under `apart`; the cells one compile can
    build together under `grouped` and `threads`; under `auto` those groups, each that
    would end the run alone split into its cells (split_critical)."""
    if strategy == "apart":
        return [[cell] for cell in cells]
    groups = arch_groups(cells)
    return split_critical(groups, expected, cores) if strategy == "auto" else groups


def strategy_of(options: RunOptions) -> CompileStrategy:
    """The run's strategy: --compile-apart (compile_together off) is `apart` whatever
    --compile-strategy says."""
    return "apart" if not options.compile_together else options.compile_strategy


def split_critical(groups: Sequence[Sequence[Cell]], expected: Callable[[Cell], float],
                   cores: int) -> list[list[Cell]]:
    """The groups, each group that would end the run alone split into its cells.

    The run can end no sooner than max(its longest compile, its compile work / cores). A
    group of n archs grouped is one compile of W seconds (its cells' expected seconds
    summed); split, its longest compile is about SPLIT_COST x W / n and the work grows by
    (SPLIT_COST - 1) x W. Taking the groups longest first, each is split where that bound,
    with the work as decided so far, is lower split than grouped: on 16 cores the 5-arch
    102 s compile is split (the bound falls from 102 s to about the work / 16), on 2 cores
    a group under the work / 2 stays grouped, as the extra host passes would only add work.
    """
    cores = max(1, cores)
    work = sum(expected(c) for group in groups for c in group)
    longest_kept = 0.0  # the longest compile of the groups decided so far
    decided: dict[int, list[list[Cell]]] = {}
    order = sorted(range(len(groups)), key=lambda i: -sum(expected(c) for c in groups[i]))
    for index in order:
        group = list(groups[index])
        whole = sum(expected(c) for c in group)
        if len(group) < 2:
            decided[index] = [group]
            longest_kept = max(longest_kept, whole)
            continue
        apart = SPLIT_COST * max(expected(c) for c in group)
        grouped_bound = max(longest_kept, whole, work / cores)
        split_bound = max(longest_kept, apart, (work + (SPLIT_COST - 1) * whole) / cores)
        if split_bound < grouped_bound:
            decided[index] = [[c] for c in group]
            work += (SPLIT_COST - 1) * whole
            longest_kept = max(longest_kept, apart)
        else:
            decided[index] = [group]
            longest_kept = max(longest_kept, whole)
    return [part for index in range(len(groups)) for part in decided[index]]


def takes_threads(job: Job) -> bool:
    """Whether the job's nvcc takes --threads (rules.toml's first release of it)."""
    first = option_releases().get(THREADS_OPTION)
    if job.env is None or not first:
        return False
    try:
        return Version(job.env.toolkit) >= Version(first)
    except InvalidVersion:
        return False


class CompileCores:
    """The cores the run's compiles hold: one for each group or cell a pool worker is
    running (`running`), and the extra ones a group's nvcc was given with --threads while
    it compiles (`group_compile`). The run's pool is as wide as --jobs, its cores."""

    def __init__(self, cores: int, strategy: CompileStrategy) -> None:
        self.cores, self.strategy = max(1, cores), strategy
        self._busy = 0
        self._lock = threading.Lock()
        # How many groups no worker has taken yet (the run's queue says, once made): an
        # idle core one of them is about to take is not idle for --threads.
        self.waiting: Callable[[], int] = lambda: 0

    @contextmanager
    def running(self) -> Iterator[None]:
        """A pool worker runs a group or a cell: one core taken until it ends."""
        with self._lock:
            self._busy += 1
        try:
            yield
        finally:
            with self._lock:
                self._busy -= 1

    def idle(self) -> int:
        with self._lock:
            return max(0, self.cores - self._busy)

    def threads_for(self, archs: int) -> int:
        """How many threads a group's nvcc of `archs` archs gets now: `threads` one per
        arch (at most the cores), `auto` its own core and the idle ones no waiting group is
        about to take, else one. At a run's start every core is idle for an instant while
        the workers take their groups: a CUTLASS group given --threads 2 then, whose nvcc
        printed a warning (its output unsplittable), was built twice, 67.9 s where 34 s
        were its share (a 16-core cold run 1.94x its floor, 1.11x without it)."""
        if self.strategy == "threads":
            return max(1, min(archs, self.cores))
        if self.strategy == "auto":
            return max(1, min(archs, 1 + max(0, self.idle() - self.waiting())))
        return 1

    @contextmanager
    def group_compile(self, job: Job) -> Iterator[Job]:
        """`job` (a group's one compile) with the threads its nvcc is given, the idle
        cores it takes held until it ends, so that a group starting beside it does not
        count them idle too."""
        threads = self.threads_for(len(job.group)) if takes_threads(job) else 1
        with self._lock:
            self._busy += threads - 1
        try:
            yield replace(job, threads=threads)
        finally:
            with self._lock:
                self._busy -= threads - 1
