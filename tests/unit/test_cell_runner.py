"""A cell's way through the run (orchestrator/cell_runner.py), each rule driven where a
mistake would break it (tests/mutations.py): which compile result a cell goes on from, which
cells one group compile builds, how many times a cell that is not as expected runs, and
which runs the ledger says a re-run must ask again."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest

from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.options import RunOptions
from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.cell_runner import CellRunner, Prepared
from cudamatrix.orchestrator.compile_cache import CompileCache
from cudamatrix.orchestrator.executors.local import LocalExecutor
from cudamatrix.orchestrator.gpu import DeviceInfo
from cudamatrix.record.results import CellResult, load_results
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.cell.specs import BuildSetting

REPO = Path(__file__).resolve().parents[2]
NO_GPU = DeviceInfo(reason="no GPU here")
H100 = DeviceInfo(name="NVIDIA H100 80GB HBM3", arch="sm_90", driver="580.65",
                  driver_cuda="13.0")


def _member(tmp_path: Path, arch: str, flags: tuple[str, ...] = (),
            frontend: str = "nvcc") -> Prepared:
    cell = Cell("c", "v", "13.0", arch, frontend)
    work = tmp_path / arch
    work.mkdir()
    job = Job(cell_id=cell.id, arch=arch, source=str(tmp_path / "k.cu"), frontend=frontend,
              workdir=str(work), timeout=60, flags=flags)
    prepared = Prepared(cell, SimpleNamespace(name="v"))  # type: ignore[arg-type]
    prepared.job, prepared.key = job, f"{arch}-key".ljust(64, "0")
    return prepared


def _runner(tmp_path: Path, device: DeviceInfo = NO_GPU, **options: object) -> CellRunner:
    """The runner's own rules, without a plan: a run's options, cache, ledger and device."""
    runner = object.__new__(CellRunner)
    runner.options = RunOptions(**options)  # type: ignore[arg-type]
    runner.cache = CompileCache(tmp_path / "cache")
    runner.deadline = None
    runner.ledger = InputLedger()
    runner.device = device
    return runner


class Together:
    """A group's compile as the worker answers it: the stages it is told to give, and the
    cells each call was asked to build."""

    def __init__(self, *answers: list[StageResult]) -> None:
        self.answers = list(answers)
        self.asked: list[list[str]] = []

    def __call__(self, todo: Sequence[Prepared]) -> list[StageResult]:
        self.asked.append([p.cell.arch for p in todo])
        return self.answers.pop(0)


def test_cells_with_flags_of_their_own_are_not_built_by_one_compile(tmp_path: Path) -> None:
    """One nvcc builds a group with one set of flags: a cell whose flags_if gave it others
    (an arch's own option) builds alone, and a group left with one cell builds nothing."""
    group = [_member(tmp_path, "sm_80"), _member(tmp_path, "sm_90", ("-DHOPPER",))]
    runner = _runner(tmp_path)
    together = Together()
    runner.build_together = together  # type: ignore[method-assign]
    runner.compile_together(group)
    assert together.asked == []
    assert [p.cached for p in group] == [None, None]


def test_a_cell_the_group_build_skipped_builds_alone(tmp_path: Path) -> None:
    """sm_80's own step failed first, so the group's nvcc never reached sm_90: sm_90 is
    built again with the cells left, here alone (never taken as skipped)."""
    group = [_member(tmp_path, "sm_80"), _member(tmp_path, "sm_90")]
    failed = StageResult("compile", "failed", "error: identifier undefined")
    runner = _runner(tmp_path)
    together = Together([failed, StageResult("compile", "skipped", "sm_80 failed first")])
    runner.build_together = together  # type: ignore[method-assign]
    runner.compile_together(group)
    assert together.asked == [["sm_80", "sm_90"]]
    assert group[0].cached == failed
    assert group[1].cached is None  # its own compile, by its worker


@pytest.fixture
def executor() -> Iterator[LocalExecutor]:
    made = LocalExecutor()
    yield made
    made.close()


def test_a_cached_compile_that_failed_is_decided_here_even_with_a_gpu(
        tmp_path: Path, executor: LocalExecutor) -> None:
    """A compile the cache (or the group) answered with a failure has nothing for a GPU:
    the cell ends here, its worker never started (it would look for a module that was
    never built)."""
    prepared = _member(tmp_path, "sm_90")
    failed = StageResult("compile", "failed", "error: identifier \"__nv_fp8\" is undefined")
    prepared.cached = failed
    runner = _runner(tmp_path, H100)
    runner.executor = executor
    stages = runner.execute(prepared)
    assert [(s.stage, s.status, s.message) for s in stages] == [
        ("compile", "failed", failed.message)]


def _published(outcome: str) -> CellResult:
    """A real cell's result from the published run, as `outcome`."""
    _, cells = load_results(REPO / "reports" / "results.json")
    passed = next(r for r in cells if r.outcome == "pass")
    return dataclasses.replace(passed, outcome=outcome, stage="run")


class Attempts:
    """A cell's attempts after its first, each judged `later`: the runner's own retry
    rule decides how many run."""

    def __init__(self, runner: CellRunner, later: str) -> None:
        self.ran = 0
        self.later = later
        runner.prepare = self.prepare  # type: ignore[method-assign]
        runner.execute = self.execute  # type: ignore[method-assign]
        runner.judged = self.judged  # type: ignore[method-assign]

    def prepare(self, cell: Cell, retry: bool = False) -> Prepared:
        assert retry, "an attempt after the first is prepared as a retry (its build again)"
        return Prepared(cell, SimpleNamespace(name="v"))  # type: ignore[arg-type]

    def execute(self, prepared: Prepared) -> list[StageResult]:
        self.ran += 1
        return []

    def judged(self, prepared: Prepared, stages: list[StageResult], seconds: float
               ) -> CellResult:
        return _published(self.later)


@pytest.mark.parametrize("retries", [0, 1, 2])
def test_a_cell_not_as_expected_runs_again_as_many_times_as_asked(
        tmp_path: Path, retries: int) -> None:
    """--retries N: at most N more attempts, each earlier one kept; none once one is as
    its case expects."""
    for later, runs in (("fail", retries), ("pass", min(retries, 1))):
        runner = _runner(tmp_path, retries=retries)
        attempts = Attempts(runner, later)
        result = runner.retried(_published("fail"))
        assert attempts.ran == runs, later
        assert len(result.attempts) == runs
        assert result.outcome == ("fail" if runs == 0 else later)


@pytest.mark.parametrize(("status", "kept"), [("ok", True), ("failed", True),
                                               ("timeout", False), ("error", False),
                                               ("crashed", False)])
def test_a_project_build_stands_for_a_rerun_unless_it_ended_by_accident(
        tmp_path: Path, status: str, kept: bool) -> None:
    """A build the project's tree, toolkit and tools decide is what a re-run would make;
    one its time limit (or a signal, or the tool breaking) ended is not."""
    prepared = _member(tmp_path, "sm_90", frontend="build")
    assert prepared.job is not None
    job = prepared.job.__class__(**{**prepared.job.__dict__, "gpu_stages": False,
                                    "build_setting": BuildSetting(str(tmp_path), "p", (), (), "")})
    prepared.key = None
    runner = _runner(tmp_path)
    runner.settle(prepared, job, [StageResult("compile", status)])  # type: ignore[arg-type]
    said = [r for r in runner.ledger.refusals if "not kept" in r]
    assert (said == []) == kept, runner.ledger.refusals
