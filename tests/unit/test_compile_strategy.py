"""How a group of cells that differ only in arch is compiled (issue 72): split into its
cells where its one compile would end the run alone and the cores can take the pieces,
kept whole where the extra host passes would only add work; a group's nvcc given
--threads for the cores idle when it starts; a threaded nvcc's output taken only where
each line's arch is certain (real nvcc 13.0 output, tests/data/logs/nvcc-13.0-*.log:
the same three-arch compiles, sm_75, sm_80 and sm_90, run with --threads 3 and without);
the compile key never holds how a compile ran.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from cudamatrix.config.options import CompileStrategy, RunOptions
from cudamatrix.config.plan import Cell
from cudamatrix.errors import Failure
from cudamatrix.orchestrator.compile_strategy import (
    SPLIT_COST,
    CompileCores,
    compile_groups,
    split_critical,
    strategy_of,
    takes_threads,
)
from cudamatrix.stages.cell.environment import Environment
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.compile.logs import PtxasFigures, split_nvcc_trace
from cudamatrix.stages.compile.nvcc_threads import ThreadedOutput

LOGS = Path(__file__).parents[1] / "data" / "logs"
ARCHS = ["sm_75", "sm_80", "sm_90"]
FIVE = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_90a")


def _group(case: str, archs: tuple[str, ...]) -> list[Cell]:
    return [Cell(case, "nvcc", "13.0", arch, "cutlass") for arch in archs]


def test_on_16_cores_the_5_arch_compile_that_ends_the_run_is_split() -> None:
    """Issue 72's run: CuTe's sgemm_sm80 for five archs, 102.6 s as one nvcc (20.5 s a
    cell), beside 100 kernels of 2 s: grouped, the run cannot end before 102.6 s; split,
    its longest compile is about 24.6 s, the work / 16 cores about 20 s."""
    cute = _group("cute", FIVE)
    kernels = [[Cell(f"k{i}", "nvcc", "13.0", "sm_90", "nvcc")] for i in range(100)]
    expected = {**{c.id: 20.52 for c in cute}, **{g[0].id: 2.0 for g in kernels}}
    groups = split_critical([cute, *kernels], lambda c: expected[c.id], 16)
    assert [[c] for c in cute] == groups[:5], groups[:6]
    assert groups[5:] == kernels


def test_on_2_cores_the_same_corpus_stays_grouped() -> None:
    """The same cells on 2 cores: the work / 2 (153 s) already bounds the run beyond the
    grouped compile, and five host passes would only add work (about 20%)."""
    cute = _group("cute", FIVE)
    kernels = [[Cell(f"k{i}", "nvcc", "13.0", "sm_90", "nvcc")] for i in range(100)]
    expected = {**{c.id: 20.52 for c in cute}, **{g[0].id: 2.0 for g in kernels}}
    groups = split_critical([cute, *kernels], lambda c: expected[c.id], 2)
    assert groups[0] == cute and len(groups) == 101


def test_a_group_alone_on_many_cores_is_split_and_small_groups_are_not() -> None:
    big, small = _group("big", FIVE), _group("small", ("sm_80", "sm_90"))
    expected = {**{c.id: 30.0 for c in big}, **{c.id: 0.5 for c in small}}
    groups = split_critical([small, big], lambda c: expected[c.id], 8)
    # The order given is kept (the schedule orders them after): the small group whole.
    assert groups[0] == small and groups[1:] == [[c] for c in big]
    # One core: nothing runs beside anything, every split only adds work.
    assert split_critical([small, big], lambda c: expected[c.id], 1) == [small, big]


def test_the_split_decision_counts_the_groups_already_split() -> None:
    """Two equal big groups on 10 cores: splitting the first makes the second the longest
    compile, so it is split too (the bound is each time the run's as decided so far)."""
    first, second = _group("a", FIVE), _group("b", FIVE)
    groups = split_critical([first, second], lambda c: 10.0, 10)
    assert groups == [[c] for c in first + second]
    assert SPLIT_COST * 10.0 < 50.0  # each piece far under the grouped 50 s


def test_compile_apart_is_the_apart_strategy_whatever_else_is_said() -> None:
    assert strategy_of(RunOptions()) == "auto"
    assert strategy_of(RunOptions(compile_strategy="threads")) == "threads"
    assert strategy_of(RunOptions(compile_together=False, compile_strategy="grouped")) == "apart"


def _job(toolkit: str = "13.0", group: int = 5) -> Job:
    env = Environment(toolkit=toolkit, provider="local", root="/cuda", nvcc="/cuda/bin/nvcc")
    return Job(cell_id="c/v/13.0/sm_80", arch="sm_80", source="/case/k.cu", frontend="nvcc",
               workdir="/tmp/w", timeout=60.0, env=env,
               group=tuple({"cell_id": f"c/{i}", "arch": f"sm_{i}", "workdir": f"/w{i}"}
                           for i in range(group)))


def test_a_group_gets_threads_for_the_cores_idle_when_it_starts() -> None:
    cores = CompileCores(16, "auto")
    with cores.running():  # the group's own worker
        with cores.group_compile(_job()) as job:
            assert job.threads == 5  # 15 cores idle, 5 archs
            assert cores.idle() == 11
            with cores.running(), cores.group_compile(_job(group=20)) as other:
                assert other.threads == 11  # its own core and the 10 still idle
                assert cores.idle() == 0
        assert cores.idle() == 15
    busy = CompileCores(2, "auto")
    with busy.running(), busy.running(), busy.group_compile(_job()) as job:
        assert job.threads == 1  # every core busy: one nvcc, one arch after another


def test_idle_cores_a_waiting_group_will_take_are_not_given_to_threads() -> None:
    """At a run's start every core is idle while the workers take their groups: a group
    then gets no --threads for cores the groups behind it are about to take, and the
    idle cores beyond them where few are left (the run's end)."""
    cores = CompileCores(16, "auto")
    waiting = [40]
    cores.waiting = lambda: waiting[0]
    with cores.running(), cores.group_compile(_job()) as job:
        assert job.threads == 1  # 15 idle, 40 groups waiting for them
    waiting[0] = 12
    with cores.running(), cores.group_compile(_job()) as job:
        assert job.threads == 4  # its own core and the 3 no waiting group takes
    waiting[0] = 0
    with cores.running(), cores.group_compile(_job()) as job:
        assert job.threads == 5


def test_forced_strategies_and_toolkits_without_threads() -> None:
    assert CompileCores(4, "threads").threads_for(5) == 4
    assert CompileCores(16, "threads").threads_for(3) == 3
    assert CompileCores(16, "grouped").threads_for(5) == 1
    assert takes_threads(_job("13.0")) and takes_threads(_job("11.2"))
    assert not takes_threads(_job("11.1"))  # rules.toml: --threads came with 11.2
    with CompileCores(16, "threads").group_compile(_job("11.0")) as old:
        assert old.threads == 1


def test_the_cores_count_is_safe_across_the_pools_threads() -> None:
    cores = CompileCores(64, "auto")

    def work() -> None:
        for _ in range(200):
            with cores.running(), cores.group_compile(_job()):
                pass

    workers = [threading.Thread(target=work) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert cores.idle() == 64


def test_how_a_compile_ran_is_never_in_its_key() -> None:
    job = _job()
    assert replace(job, threads=5).compile_inputs() == job.compile_inputs()
    assert "threads" not in job.compile_inputs()


def _read(name: str) -> ThreadedOutput:
    reader = ThreadedOutput()
    for line in (LOGS / name).read_text().splitlines():
        reader.feed(line)
    return reader


def test_a_threaded_builds_figures_split_as_the_serial_build_splits_them() -> None:
    """The clean kernel: nvcc --threads printed every ptxas step's trace line, then the
    three blocks in the order they ended (sm_80, sm_75, sm_90). Each arch's part and its
    figures are those of the build one arch after another."""
    split = _read("nvcc-13.0-threads-clean.log").split(ARCHS)
    assert not isinstance(split, Failure), split
    parts, figures = split
    serial_text = (LOGS / "nvcc-13.0-serial-clean.log").read_text()
    serial = split_nvcc_trace(serial_text, ARCHS)
    assert not isinstance(serial, Failure)
    serial_figures = PtxasFigures()
    for line in serial_text.splitlines():
        serial_figures.feed(line)
    for arch in ARCHS:
        assert _without_times(parts[arch]) == _without_times(serial[0][arch]), arch
        assert figures.for_arch(arch) == serial_figures.for_arch(arch), arch
        assert figures.for_arch(arch), arch
    assert figures.for_arch("sm_75")[0]["registers"] == 20
    assert figures.for_arch("sm_80")[0]["registers"] == 22


def _without_times(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "Compile time" not in line)


def test_a_warning_of_one_arch_makes_the_threaded_output_unsplittable() -> None:
    """sm_80's own cicc warning came under sm_75's ptxas trace line: whose it is, no line
    says, so the group is built again one arch after another."""
    split = _read("nvcc-13.0-threads-warns.log").split(ARCHS)
    assert isinstance(split, Failure)
    assert "unused_800" in split.reason
    serial = split_nvcc_trace((LOGS / "nvcc-13.0-serial-warns.log").read_text(), ARCHS)
    assert not isinstance(serial, Failure)  # the serial build says it is sm_80's
    assert "unused_800" in serial[0]["sm_80"] and "unused_800" not in serial[0]["sm_90"]


def test_a_failed_threaded_build_is_never_split() -> None:
    """sm_75's cicc failed (__reduce_add_sync is sm_80's); nvcc printed its error after
    sm_90's ptxas trace line, which a serial split blames."""
    log = (LOGS / "nvcc-13.0-threads-fails.log").read_text()
    split = _read("nvcc-13.0-threads-fails.log").split(ARCHS)
    assert isinstance(split, Failure)
    naive = split_nvcc_trace(log, ARCHS)
    assert not isinstance(naive, Failure) and naive[1] == "sm_90"  # the wrong arch


@pytest.mark.parametrize("lines, why", [
    (["#$ ptxas -arch=sm_80 -v k.ptx", "ptxas info    : 0 bytes gmem",
      "ptxas info    : Function properties for f"], "naming 0 archs"),
    (["#$ ptxas -arch=sm_80 -v k.ptx", "ptxas info    : 0 bytes gmem",
      "ptxas info    : Compiling entry function 'k' for 'sm_80'",
      "ptxas info    : Compiling entry function 'k' for 'sm_90'"], "naming 2 archs"),
    (["#$ ptxas -arch=sm_80 -v k.ptx", "#$ ptxas -arch=sm_90 -v k.ptx",
      "ptxas info    : 0 bytes gmem",
      "ptxas info    : Compiling entry function 'k' for 'sm_80'"], "ptxas ran for"),
    (["ptxas info    : Used 8 registers"], "more than ptxas's figures"),
])
def test_what_cannot_be_told_apart_is_said(lines: list[str], why: str) -> None:
    reader = ThreadedOutput()
    for line in lines:
        reader.feed(line)
    split = reader.split(["sm_80", "sm_90"])
    assert isinstance(split, Failure) and why in split.reason, split


def test_a_split_groups_extra_host_passes_count_against_the_next_split() -> None:
    """4 cores: the 5-arch group of 50 s is split (12 s a piece; the work grows by its
    extra host passes, 10 s, to 85 s: 21.25 s a core). The 2-arch group of 20 s then stays
    whole: split, its own extra 4 s would put the work per core (22.25 s) past what the
    run takes with it grouped (21.25 s)."""
    big, pair = _group("big", FIVE), _group("pair", ("sm_80", "sm_90"))
    one = [Cell("one", "nvcc", "13.0", "sm_90", "nvcc")]
    expected = {**{c.id: 10.0 for c in big + pair}, one[0].id: 5.0}
    groups = split_critical([one, pair, big], lambda c: expected[c.id], 4)
    assert groups == [one, pair, *[[c] for c in big]]


def test_a_group_one_arch_dominates_stays_whole_on_any_cores() -> None:
    """sm_90a's compile is 10 s of the group's 11 s: alone it costs 1.2 x 10 s (its own
    host pass) = 12 s, longer than the group's one 11 s compile: split, the run would end
    later, however many cores wait."""
    group = _group("hopper", ("sm_80", "sm_90a"))
    expected = {group[0].id: 1.0, group[1].id: 10.0}
    assert split_critical([group], lambda c: expected[c.id], 16) == [group]


@pytest.mark.parametrize(("strategy", "cores", "sizes"), [
    ("apart", 16, [1] * 8),     # every cell its own compile, whatever the cores
    ("grouped", 16, [3, 5]),    # the five archs one compile, the kernel's three another
    ("threads", 16, [3, 5]),    # grouped as above: its threads come when a compile starts
    ("auto", 16, [1] * 5 + [3]),  # the five-arch compile would end the run alone: split
    ("auto", 2, [1] * 5 + [3]),  # two cores and little else: two archs at a time win
    ("auto", 1, [3, 5]),        # one core: nothing runs beside it, a split only adds work
])
def test_the_runs_units_of_work_by_strategy(strategy: CompileStrategy, cores: int,
                                             sizes: list[int]) -> None:
    """What the run hands its pool (runner._execute): the strategy and the cores decide
    which cells share one compile; every cell is there exactly once."""
    cute = _group("cute", FIVE)
    kernel = _group("kernel", ("sm_75", "sm_80", "sm_90"))
    expected = {**{c.id: 20.52 for c in cute}, **{c.id: 0.4 for c in kernel}}
    groups = compile_groups([*cute, *kernel], strategy, lambda c: expected[c.id], cores)
    assert sorted(len(g) for g in groups) == sizes, groups
    assert sorted(c.id for g in groups for c in g) == sorted(c.id for c in [*cute, *kernel])
