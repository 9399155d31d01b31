"""The run's schedule (issue 27, point 2): longest first, by what each cell took last time
(kept in the cache), so a long cell is never left running alone at the end; a cell never
timed gets its frontend's guess; a cache hit does not overwrite a cold run's time; a
damaged or unwritable timing file is no timing."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.cell_timings import FILE, CellTimings
from cudamatrix.record.results import CellResult
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.frontends import frontend


def _cell(case: str, frontend: str = "nvrtc") -> Cell:
    return Cell(case, "v", "13.0", "sm_90", frontend)


def _result(cell: Cell, seconds: float, hit: bool = False) -> CellResult:
    data: dict[str, Any] = {
        "case": cell.case, "variant": cell.variant, "toolkit": cell.toolkit,
        "arch": cell.arch, "frontend": cell.frontend, "outcome": "pass", "stage": "compile",
        "seconds": seconds,
        "stages": [{"stage": "compile", "status": "ok", "details": {"cache": "hit"} if hit
                    else {}}]}
    return CellResult.from_dict(data)


def test_the_longest_cell_last_time_goes_first(tmp_path: Path) -> None:
    kernel, cutlass, long_kernel = _cell("a"), _cell("b", "cutlass"), _cell("c")
    timings = CellTimings(tmp_path)
    # Never timed: the slow frontend first, as before any run.
    assert timings.schedule([kernel, cutlass, long_kernel]) == [cutlass, kernel, long_kernel]
    timings.record([_result(kernel, 0.4), _result(cutlass, 30.0), _result(long_kernel, 314.0)])
    again = CellTimings(tmp_path)
    assert again.schedule([kernel, cutlass, long_kernel]) == [long_kernel, cutlass, kernel]


def test_on_a_fresh_clone_every_slow_frontend_goes_first(tmp_path: Path) -> None:
    """The cell that finished alone after 314 s (cutlass-sm90/emit-pytorch-build) ran last
    on a fresh clone: its frontend was not marked slow. Nor was a project's own build."""
    kernels = [_cell(f"k{i}") for i in range(3)]
    slow = [_cell("emit", "cutlass-python-build"), _cell("proj", "build"),
            _cell("gemm", "cutlass")]
    order = CellTimings(tmp_path).schedule([*kernels, *slow])
    assert order[:3] == slow


def test_a_cache_hit_keeps_the_cold_time(tmp_path: Path) -> None:
    cell = _cell("a")
    CellTimings(tmp_path).record([_result(cell, 12.0)])
    CellTimings(tmp_path).record([_result(cell, 0.01, hit=True)])
    assert json.loads((tmp_path / FILE).read_text()) == {"a/v/13.0/sm_90": 12.0}


def test_a_wait_for_the_gpu_is_not_the_cells_cost(tmp_path: Path) -> None:
    """A timed cell that waited 23 s for its GPU (a hang beside it) cost 2 s of work: 2 s is
    recorded, or it starts first next time, to wait again (issue 81)."""
    cell = _cell("saxpy")
    result = _result(cell, 25.0)
    load = StageResult("load", "ok", "", details={"gpu_wait_s": 23.0})
    CellTimings(tmp_path).record([replace(result, stages=(*result.stages, load))])
    assert json.loads((tmp_path / FILE).read_text()) == {"saxpy/v/13.0/sm_90": 2.0}


def test_a_never_timed_cell_is_guessed_as_its_frontend_guesses_its_kind(tmp_path: Path) -> None:
    """A first run orders cells and says its ETA by each frontend's guess: a CuTe DSL
    compile (3.5-4.4 s on 2 cores) ahead of an NVRTC kernel (0.06 s), a PyTorch extension
    (minutes) ahead of every kernel; one guess for every fast frontend made a CuTe DSL
    compile cost what an NVRTC one took, and a torch extension a second."""
    timings = CellTimings(tmp_path)

    def guess(name: str) -> float:
        cell = Cell("never-timed", "v", "13.0", "sm_90", name)
        assert timings.guessed(cell)
        return timings.expected(cell)

    assert guess("nvrtc") < guess("nvcc") < guess("cute-dsl") < guess("build")
    assert guess("torch-extension") > guess("cutlass") >= guess("build")


def test_a_damaged_or_unwritable_file_is_no_timing(tmp_path: Path) -> None:
    (tmp_path / FILE).write_text("{not json")
    timings = CellTimings(tmp_path)
    assert timings.expected(_cell("a")) == frontend("nvrtc").guess_s
    # Unwritable as root too: a folder where the file goes (a mode root ignores would
    # leave the failure branch untried).
    (tmp_path / FILE).unlink()
    (tmp_path / FILE).mkdir()
    timings = CellTimings(tmp_path)
    assert timings.expected(_cell("a")) == frontend("nvrtc").guess_s
    timings.record([_result(_cell("a"), 3.0)])  # no error
    assert (tmp_path / FILE).is_dir()


def test_a_group_built_together_goes_by_its_cells_together(tmp_path: Path) -> None:
    """Cells that differ only in arch are built by one compile (compile_strategy.arch_groups): the
    group's cost is its cells' together, so two 20-s CUTLASS archs go before one 30-s
    kernel, and every other cell stands alone."""
    from cudamatrix.orchestrator.compile_strategy import arch_groups

    gemm = [Cell("gemm", "v", "13.0", arch, "cutlass") for arch in ("sm_90", "sm_90a")]
    kernel = _cell("k")
    other_toolkit = Cell("gemm", "v", "12.4", "sm_90", "cutlass")
    groups = arch_groups([kernel, *gemm, other_toolkit])
    assert groups == [[kernel], gemm, [other_toolkit]]
    timings = CellTimings(tmp_path)
    timings.record([_result(kernel, 30.0), *(_result(c, 20.0) for c in gemm),
                    _result(other_toolkit, 25.0)])
    assert CellTimings(tmp_path).schedule_groups(groups) == [gemm, [kernel], [other_toolkit]]


def test_a_first_run_starts_the_shipped_corpus_longest_cell_first(tmp_path: Path) -> None:
    """Issue 52: on a machine that never ran them, the shipped corpus's cells are ordered by
    what they cost on the reference machine (config/data/cell-costs.json): the
    CUTLASS-emitted PyTorch extension's build (237 s) started late, behind cells that
    happened to come first, and made the whole first run."""
    from cudamatrix.config.defaults import DEFAULT_MATRIX, KNOWN_BUGS
    from cudamatrix.config.matrix import load_matrix
    from cudamatrix.config.plan import expand
    from cudamatrix.orchestrator.cell_timings import shipped_costs

    costs = shipped_costs()
    matrix = load_matrix(DEFAULT_MATRIX)
    from cudamatrix.config.corpus import load_corpus

    cases = load_corpus([KNOWN_BUGS])
    cells = expand(matrix, matrix.tiers["pr"], cases, cache=tmp_path / "cache")
    missing = [c.id for c in cells if c.id not in costs]
    assert not missing, f"{len(missing)} shipped cells have no reference cost: {missing[:5]}"
    first = CellTimings(tmp_path).schedule(cells)[0]  # an empty cache: no timing of its own
    assert costs[first.id] == max(costs[c.id] for c in cells)
    assert first.case == "cutlass-sm90" and "pytorch" in first.variant, first.id


def test_a_cells_recorded_seconds_count_its_load_on_the_gpu(tmp_path: Path) -> None:
    """Issue 81, point 2: a load that JIT-compiles a large PTX is the cell's work, so its
    seconds must be in what the schedule learns. They are, and were: the cell's seconds
    are measured around the executor's run of the cell (cell_runner.run_cells), whose GPU
    steps (the load on its GPU's server, executors/local.py) are inside it. Here the
    executor's run takes 0.3 s, as a JIT load would on the server."""
    import time
    from types import SimpleNamespace

    from cudamatrix.config.options import RunOptions
    from cudamatrix.orchestrator.cell_runner import CellRunner, Prepared
    from cudamatrix.orchestrator.gpu import DeviceInfo
    from cudamatrix.stages.cell.job import Job
    from cudamatrix.stages.cell.result import StageResult

    cell = _cell("jit-heavy")

    class JitOnTheServer:
        def run(self, job: Job) -> list[StageResult]:
            time.sleep(0.3)  # the load: the driver compiling the cell's PTX
            return [StageResult("compile", "ok", ""), StageResult("load", "ok", "",
                                                                  details={"via": "ptx-jit"})]

    runner = object.__new__(CellRunner)
    runner.options = RunOptions()
    runner.deadline = None
    runner.device = DeviceInfo(name="NVIDIA H100", arch="sm_90", driver="580.65")
    runner.executor = JitOnTheServer()  # type: ignore[assignment]
    prepared = Prepared(cell, SimpleNamespace(name="v"))  # type: ignore[arg-type]
    prepared.job = Job(cell_id=cell.id, arch="sm_80", source="k.cu", frontend="nvrtc",
                       workdir=str(tmp_path), timeout=60)
    runner.prepare = lambda c: prepared  # type: ignore[method-assign]
    runner.settle = lambda *args: None  # type: ignore[method-assign]
    runner.judged = lambda p, stages, seconds: _result(p.cell, seconds)  # type: ignore
    results = runner.run_cells([cell])
    timings = CellTimings(tmp_path)
    timings.record(results)
    assert CellTimings(tmp_path).expected(cell) >= 0.3


def test_a_cell_is_guessed_until_timed_here_or_on_the_reference_machine(
        tmp_path: Path) -> None:
    """The ETA takes a guessed cell at what its guess's cells take in the run (eta.py): a
    cell timed here, or shipped with the reference machine's figure, is a record instead."""
    timings = CellTimings(tmp_path)
    never, shipped = _cell("never-timed-anywhere"), _cell("x")
    timings.shipped = {"x/v/13.0/sm_90": 3.0}
    assert timings.guessed(never) and not timings.guessed(shipped)
    timings.record([_result(never, 2.0)])
    assert not CellTimings(tmp_path).guessed(never)


def test_a_cell_expected_to_hang_costs_its_limit_before_it_ever_ran(tmp_path: Path) -> None:
    """Issue 81: a first run on an H100 guessed the faults corpus's kernel that never
    returns (its case expects a timeout at run, `timeout = 20`) at nvcc's one second, so it
    started late, and the timed cells, which wait for an idle GPU, waited out its 20 s
    after every other cell (44.9 s against 36.0 s with the costs recorded). Its limit is
    known from its case: where a GPU runs it, it is its cost and it starts first; where
    none does, it stops at compile like its neighbours and is guessed like them."""
    from cudamatrix.config.corpus import load_corpus
    from cudamatrix.config.defaults import DEFAULT_MATRIX
    from cudamatrix.config.matrix import load_matrix
    from cudamatrix.config.options import RunOptions
    from cudamatrix.config.plan import expand
    from cudamatrix.orchestrator.cell_jobs import runs_to_its_limit

    data = Path(__file__).parents[1] / "data" / "gpu-faults"
    cases = {c.id: c for c in load_corpus([data])}
    matrix = load_matrix(DEFAULT_MATRIX)
    cells = [c for c in expand(matrix, matrix.tiers["nightly"], list(cases.values()),
                               toolkits=["13.0"], archs=["sm_90"], cache=tmp_path / "c")]
    hang = next(c for c in cells if c.variant == "never-returns")
    options = RunOptions()

    def variant(c: Cell) -> Any:
        return next(v for v in cases[c.case].variants if v.name == c.variant)

    def limits(gpu: bool) -> dict[Cell, float]:
        return {c: limit for c in cells
                if (limit := runs_to_its_limit(variant(c), c, options, gpu)) is not None}

    assert limits(gpu=True) == {hang: 20.0}
    assert limits(gpu=False) == {}
    on_a_gpu = CellTimings(tmp_path, limits=limits(gpu=True))
    assert on_a_gpu.schedule(cells)[0] == hang
    assert on_a_gpu.expected(hang) == 20.0 and not on_a_gpu.guessed(hang)
    assert CellTimings(tmp_path, limits=limits(gpu=False)).guessed(hang)
    # What it took here wins over its limit, as for every other cell.
    on_a_gpu.record([_result(hang, 24.8)])
    assert CellTimings(tmp_path, limits=limits(gpu=True)).expected(hang) == 24.8


def test_a_compiler_expected_to_hang_costs_its_limit_without_a_gpu(tmp_path: Path) -> None:
    """A case that expects its compiler to run to the limit (stage compile) costs it on
    every machine; the case's `timeout` is the limit, else --cell-timeout."""
    from cudamatrix.config.corpus import load_corpus
    from cudamatrix.config.options import RunOptions
    from cudamatrix.orchestrator.cell_jobs import runs_to_its_limit

    case = tmp_path / "corpus" / "slow-template"
    case.mkdir(parents=True)
    (case / "k.cu").write_text("__global__ void k() {}\n")
    (case / "case.toml").write_text(
        'title = "a template that takes the compiler past its limit"\n'
        '[[variant]]\nname = "own-limit"\nsource = "k.cu"\nfrontend = "nvcc"\ntimeout = 45\n'
        '  [[variant.expect]]\n  outcome = "timeout"\n  stage = "compile"\n'
        '[[variant]]\nname = "run-limit"\nsource = "k.cu"\nfrontend = "nvcc"\n'
        '  [[variant.expect]]\n  outcome = "timeout"\n  stage = "compile"\n')
    own, run_limit = load_corpus([tmp_path / "corpus"])[0].variants
    cell = Cell("slow-template", "own-limit", "13.0", "sm_90", "nvcc")
    assert runs_to_its_limit(own, cell, RunOptions(), gpu=False) == 45.0
    assert runs_to_its_limit(run_limit, replace(cell, variant="run-limit"),
                             RunOptions(cell_timeout=90), gpu=False) == 90.0
