"""A cell's pipeline (stages/runtime/pipeline.py): its one loop and its one rule, with real
small steps (a compile that writes real PTX, the real inspect stage, a GPU place that
records what it was handed) and, for a crash, a real worker process.

The rule: a compile that did not work ends the cell; an inspect error (the case names a
kernel the module lacks) ends it; an artifact check or budget that failed does not (the
GPU stages still run: what the bad build does there is evidence); a load that did not
work ends it; where there is no GPU, a cell that would go on gets its load skipped; a
worker that dies is recorded at the stage it was in, after the stages it finished."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from cudamatrix.orchestrator.executors.local import LocalExecutor
from cudamatrix.stages.cell.files import COMPILE_RECORD, PTX, STAGE_FILE
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.cell.sequence import stops
from cudamatrix.stages.cell.specs import ArtifactCheck
from cudamatrix.stages.cell.steps import Carried, Step
from cudamatrix.stages.compile.built import Build
from cudamatrix.stages.frontends.registry import Frontend, register
from cudamatrix.stages.runtime.pipeline import (
    compile_group,
    fresh,
    goes_on,
    recorded,
    run_gpu_steps,
    run_steps,
    standard,
    steps_for,
    without_gpu,
)

SAXPY_PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry saxpy(.param .u64 x)
{
    ret;
}
"""


def _job(tmp_path: Path, **settings: object) -> Job:
    work = tmp_path / "cell"
    work.mkdir(exist_ok=True)
    made = Job(cell_id="c/v/13.0/sm_80", arch="sm_80", source=str(tmp_path / "k.cu"),
               frontend="nvcc", workdir=str(work), timeout=60, kernel="saxpy")
    return replace(made, **settings)  # type: ignore[arg-type]


def compile_saxpy(job: Job) -> Build:
    """A compile that works: real PTX with the kernel `saxpy`."""
    ptx = job.work / PTX
    ptx.write_text(SAXPY_PTX)
    return Build(StageResult("compile", "ok", "", "built"), ptx)


def compile_refused(job: Job) -> Build:
    return Build(StageResult("compile", "failed", "error: identifier undefined"))


class Gpu:
    """Where the load and run execute: records what it was handed, says what it is told."""

    def __init__(self, load: str = "ok") -> None:
        self.handed: list[Job] = []
        self.modules: list[Path | None] = []  # the PTX each load was handed
        self.load = load

    def __call__(self, job: Job, ptx: Path | None, cubin: Path | None,
                 library: Path | None) -> list[StageResult]:
        self.handed.append(job)
        self.modules.append(ptx)
        if self.load != "ok":
            return [StageResult("load", self.load, "refused")]  # type: ignore[arg-type]
        return [StageResult("load", "ok"), StageResult("run", "ok")]


def _said(stages: Sequence[StageResult]) -> list[tuple[str, str]]:
    return [(s.stage, s.status) for s in stages]


def test_a_compile_that_failed_ends_the_cell(tmp_path: Path) -> None:
    gpu = Gpu()
    stages = run_steps(Carried(_job(tmp_path)), standard(fresh(compile_refused), gpu))
    assert _said(stages) == [("compile", "failed")]
    assert gpu.handed == []
    assert not (tmp_path / "cell" / COMPILE_RECORD).exists()  # only a compile that worked


def test_a_compile_that_worked_is_measured_recorded_and_run_on(tmp_path: Path) -> None:
    gpu = Gpu()
    stages = run_steps(Carried(_job(tmp_path)), standard(fresh(compile_saxpy), gpu))
    assert _said(stages) == [("compile", "ok"), ("inspect", "ok"), ("load", "ok"), ("run", "ok")]
    assert "compiler_cpu_s" in stages[0].details
    record = json.loads((tmp_path / "cell" / COMPILE_RECORD).read_text())
    assert record["details"]["compiler_cpu_s"] == stages[0].details["compiler_cpu_s"]
    # The kernel as the inspect found it in the module is what the GPU is handed.
    assert [j.kernel for j in gpu.handed] == ["saxpy"]
    saved = json.loads((tmp_path / "cell" / "stages.json").read_text())
    assert [s["stage"] for s in saved] == ["compile", "inspect", "load", "run"]


def test_an_inspect_error_ends_the_cell(tmp_path: Path) -> None:
    gpu = Gpu()
    job = _job(tmp_path, kernel="gemm")  # the module has saxpy alone
    stages = run_steps(Carried(job), standard(fresh(compile_saxpy), gpu))
    assert _said(stages) == [("compile", "ok"), ("inspect", "error")]
    assert "gemm" in stages[1].message
    assert gpu.handed == []


def test_an_artifact_check_that_failed_still_runs_the_gpu_stages(tmp_path: Path) -> None:
    gpu = Gpu()
    job = _job(tmp_path, artifacts=(ArtifactCheck("ptx", r"wgmma", True, "Hopper's MMA"),))
    stages = run_steps(Carried(job), standard(fresh(compile_saxpy), gpu))
    assert _said(stages) == [("compile", "ok"), ("inspect", "failed"), ("load", "ok"),
                             ("run", "ok")]
    assert len(gpu.handed) == 1


def test_a_load_that_failed_ends_the_cell(tmp_path: Path) -> None:
    ran: list[str] = []
    steps = [fresh(compile_saxpy),
             Step("load", lambda c: [StageResult("load", "failed", "no binary for GPU")],
                  gpu=True),
             Step("run", lambda c: ran.append("run") or [StageResult("run", "ok")], gpu=True)]
    stages = run_steps(Carried(_job(tmp_path)), steps)
    assert _said(stages) == [("compile", "ok"), ("load", "failed")]
    assert ran == []


def test_with_no_gpu_a_cell_that_would_go_on_has_its_load_skipped(tmp_path: Path) -> None:
    gpu = Gpu()
    job = _job(tmp_path, gpu_stages=False,
               artifacts=(ArtifactCheck("ptx", r"wgmma", True, ""),))
    stages = run_steps(Carried(job), standard(fresh(compile_saxpy), gpu))
    assert gpu.handed == []
    assert _said(without_gpu(stages, "no GPU here")) == [
        ("compile", "ok"), ("inspect", "failed"), ("load", "skipped")]
    # Nothing to skip where the cell had ended.
    ended = [StageResult("compile", "ok"), StageResult("inspect", "error", "no kernel")]
    assert without_gpu(ended, "no GPU here") == ended
    refused = [StageResult("compile", "failed")]
    assert without_gpu(refused, "no GPU here") == refused


def test_a_compile_that_raised_is_the_tools_error(tmp_path: Path) -> None:
    def broken(job: Job) -> Build:
        raise OSError("nvcc: no such file")

    stages = run_steps(Carried(_job(tmp_path)), standard(fresh(broken), Gpu()))
    assert _said(stages) == [("compile", "error")]
    assert "OSError: nvcc: no such file" in stages[0].message


def test_a_step_past_the_cells_limit_is_its_stages_timeout(tmp_path: Path) -> None:
    def test_command(carried: Carried) -> list[StageResult]:
        raise subprocess.TimeoutExpired(["ctest"], 60)

    steps = [fresh(compile_saxpy), Step("run", test_command, gpu=True)]
    stages = run_steps(Carried(_job(tmp_path)), steps)
    assert _said(stages) == [("compile", "ok"), ("run", "timeout")]
    assert (tmp_path / "cell" / STAGE_FILE).read_text() == "run"


def test_a_prebuilt_compile_is_taken_from_its_record(tmp_path: Path) -> None:
    earlier = _job(tmp_path)
    run_steps(Carried(earlier), standard(fresh(compile_saxpy), Gpu()))

    def never(job: Job) -> Build:
        raise AssertionError("a prebuilt cell compiles nothing")

    job = replace(earlier, prebuilt=str(earlier.work), gpu_stages=False)
    steps = [recorded() if s.stage == "compile" else s
             for s in standard(fresh(never), Gpu())]
    stages = run_steps(Carried(job), steps)
    assert _said(stages) == [("compile", "ok"), ("inspect", "ok")]
    assert stages[0].log == "built"
    # steps_for makes the same substitution in a frontend's own list (nvcc's here: were it
    # compiled again, the cell would fail for want of a toolkit).
    (tmp_path / "cell" / "stages.json").unlink()
    assert _said(run_steps(Carried(job), steps_for(job))) == [("compile", "ok"),
                                                             ("inspect", "ok")]


def test_the_gpu_server_goes_on_from_where_the_worker_stopped(tmp_path: Path) -> None:
    job = _job(tmp_path)
    worker = run_steps(Carried(replace(job, gpu_stages=False)),
                       standard(fresh(compile_saxpy), Gpu()))
    assert _said(worker) == [("compile", "ok"), ("inspect", "ok")]
    server = Gpu()
    assert _said(run_gpu_steps(job, worker, server)) == [
        ("compile", "ok"), ("inspect", "ok"), ("load", "ok"), ("run", "ok")]
    assert [j.kernel for j in server.handed] == ["saxpy"]
    ended = [StageResult("compile", "ok"), StageResult("inspect", "error", "no kernel")]
    assert run_gpu_steps(job, ended, server) == ended
    assert len(server.handed) == 1


def test_the_rule() -> None:
    ok = StageResult("compile", "ok")
    assert goes_on([])
    assert goes_on([ok])
    assert not goes_on([StageResult("compile", "failed")])
    assert not goes_on([StageResult("compile", "skipped")])
    assert goes_on([ok, StageResult("inspect", "failed")])
    assert goes_on([ok, StageResult("inspect", "unavailable")])
    for ended in ("error", "timeout", "crashed"):
        assert not goes_on([ok, StageResult("inspect", ended)])  # type: ignore[arg-type]
    assert not goes_on([ok, StageResult("load", "failed")])
    assert not goes_on([ok, StageResult("load", "skipped")])
    assert goes_on([ok, StageResult("load", "ok")])


def test_a_gpu_stage_that_did_not_work_stops_the_cell_alone() -> None:
    """`stops`, asked of one stage where the rest are not at hand (the load before its run,
    the torch extension's import before its call): a load that could not be done here
    (unavailable, skipped) stops the cell as a failed one does, or a run would be tried on
    no module; a failed check before the GPU stages does not."""
    for status in ("failed", "unavailable", "skipped", "unsupported"):
        assert stops(StageResult("load", status))  # type: ignore[arg-type]
        assert stops(StageResult("run", status))  # type: ignore[arg-type]
    assert not stops(StageResult("load", "ok"))
    assert not stops(StageResult("inspect", "failed"))
    assert not stops(StageResult("inspect", "unavailable"))
    for ended in ("error", "timeout", "crashed"):
        assert stops(StageResult("inspect", ended))  # type: ignore[arg-type]


# --- a real worker: the crash at its stage ---------------------------------------------------

CRASHING = '''
import os, signal
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.cell.steps import Step
from cudamatrix.stages.frontends import Frontend, register


def steps(job):
    def crash(carried):
        os.kill(os.getpid(), signal.SIGSEGV)
        return []
    return [Step("compile", lambda c: [StageResult("compile", "ok", "", "built")]),
            Step("inspect", lambda c: [StageResult("inspect", "failed", "lacks wgmma")]),
            Step("load", crash), Step("run", lambda c: [StageResult("run", "ok")])]


register(Frontend("toy-crash", steps=steps, toolkit_free=True, cached=False))
'''


@pytest.fixture
def executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalExecutor]:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "toy_crash.py").write_text(CRASHING)
    monkeypatch.setenv("CUDAMATRIX_FRONTENDS", "toy_crash")
    # The plugin beside the package under test (a copy of it where tests/mutations.py
    # runs these tests), which the worker imports as this process does.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (
        str(tmp_path / "plugins"), os.environ.get("PYTHONPATH")))))
    made = LocalExecutor()
    yield made
    made.close()


def test_a_worker_that_dies_is_recorded_at_its_stage(executor: LocalExecutor,
                                                     tmp_path: Path) -> None:
    job = replace(_job(tmp_path), frontend="toy-crash", kernel=None)
    stages = executor.run(job)
    assert _said(stages) == [("compile", "ok"), ("inspect", "failed"), ("load", "crashed")]
    assert stages[-1].message == "cell worker killed by SIGSEGV"


# --- the compile results and the loop, each as a mistake would break it (tests/mutations.py)

def test_a_compile_past_the_cells_limit_is_its_timeout(tmp_path: Path) -> None:
    """A compiler stopped at the cell's limit is the cell's timeout, not the tool's error."""
    def slow(job: Job) -> Build:
        subprocess.run(["sleep", "5"], timeout=0.2, check=False)
        raise AssertionError("the compiler was not stopped")

    stages = run_steps(Carried(_job(tmp_path)), standard(fresh(slow), Gpu()))
    assert _said(stages) == [("compile", "timeout")]
    assert (tmp_path / "cell" / STAGE_FILE).read_text() == "compile"


def test_a_prebuilt_compile_is_read_from_its_own_folder(tmp_path: Path) -> None:
    """--prebuilt names another folder than the cell's (an earlier run's, another
    machine's): the record and the module are read there."""
    earlier = _job(tmp_path)
    run_steps(Carried(earlier), standard(fresh(compile_saxpy), Gpu()))
    elsewhere = tmp_path / "now"
    elsewhere.mkdir()
    job = replace(earlier, workdir=str(elsewhere), prebuilt=str(earlier.work))
    gpu = Gpu()
    steps = [recorded() if s.stage == "compile" else s for s in standard(fresh(compile_saxpy),
                                                                        gpu)]
    stages = run_steps(Carried(job), steps)
    assert _said(stages) == [("compile", "ok"), ("inspect", "ok"), ("load", "ok"), ("run", "ok")]
    assert stages[0].log == "built"
    assert gpu.modules == [earlier.work / PTX]


def test_each_steps_stages_are_saved_before_the_next_step_runs(tmp_path: Path) -> None:
    """What a worker that dies in a later step leaves: the stages before it, on disk."""
    seen: list[list[str]] = []

    def load(carried: Carried) -> list[StageResult]:
        saved = json.loads((carried.job.work / "stages.json").read_text())
        seen.append([s["stage"] for s in saved])
        return [StageResult("load", "ok")]

    run_steps(Carried(_job(tmp_path)), [*standard(fresh(compile_saxpy))[:2],
                                        Step("load", load, gpu=True)])
    assert seen == [["compile", "inspect"]]


def test_the_gpu_server_is_handed_the_module_the_worker_built(tmp_path: Path) -> None:
    job = _job(tmp_path)
    worker = run_steps(Carried(replace(job, gpu_stages=False)),
                       standard(fresh(compile_saxpy), Gpu()))
    server = Gpu()
    run_gpu_steps(job, worker, server)
    assert server.modules == [job.work / PTX]


def test_with_no_gpu_a_cell_that_ran_its_own_load_gets_no_other(tmp_path: Path) -> None:
    """A frontend whose own steps load and run where no GPU is asked for (a build's test
    command, CuPy's): nothing is skipped after them."""
    ran = [StageResult("compile", "ok"), StageResult("load", "ok"), StageResult("run", "ok")]
    assert without_gpu(ran, "no GPU here") == ran


class Group:
    """A frontend's compile_together: each arch built by a real compiler process (a
    Python that counts, for its CPU time), a stage each."""

    def __call__(self, job: Job) -> list[StageResult]:
        for _ in job.group:
            subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)
        return [StageResult("compile", "ok", "", "built") for _ in job.group]


GROUPED = Frontend("toy-grouped", compile=compile_saxpy, compile_together=Group(),
                   toolkit_free=True, cached=False)


def test_a_groups_compile_charges_each_cell_its_share(tmp_path: Path) -> None:
    register(GROUPED)
    members = []
    for arch in ("sm_80", "sm_90", "sm_100"):
        (tmp_path / arch).mkdir()
        members.append({"cell_id": f"c/v/13.0/{arch}", "arch": arch,
                        "workdir": str(tmp_path / arch)})
    job = _job(tmp_path, frontend="toy-grouped", group=tuple(members))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    stages = compile_group(job)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    shares = [s.details["compiler_cpu_s"] for s in stages]
    assert len(set(shares)) == 1  # alike: one compile built them all
    assert sum(shares) == pytest.approx(spent, rel=0.25, abs=0.05)
    for member in members:  # each cell's record, as its own compile leaves it
        record = json.loads((Path(member["workdir"]) / COMPILE_RECORD).read_text())
        assert record["details"]["compiler_cpu_s"] == shares[0]
