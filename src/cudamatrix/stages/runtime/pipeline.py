"""A cell's stages, decided here and nowhere else: an ordered list of steps run by one loop.

The list is compile -> inspect -> load and run (the run timed where the case asks), or a
frontend's own (`Frontend.steps`: CuPy compiles through the driver, a build runs the
project's own test, a torch extension is imported and called by torch).

The compile result comes one of four ways, each a compile step here:

- `fresh`: the frontend's compile, in the cell's worker;
- `recorded`: the record and module in a folder, taken back by the worker: an earlier
  run's (--prebuilt), a compile-cache hit or a group's shared compile (`compile_group`)
  where a GPU runs the rest;
- `given`: the same, decided in the run's process where nothing after the inspect runs
  (no GPU here, or a compile that failed): nothing is left that could crash.

Where the load and run execute is the loop's `place`: this process (a cell's worker, here
or in its container: `in_this_process`), or the GPU's server, which holds its context for
the run (executors/local.py hands the loop's GPU steps to it after the worker stopped
before them: `run_gpu_steps`).

One rule (`goes_on`, stages/cell/sequence.py) says whether the next step runs, in the
worker, for the GPU's server and for "load skipped" where there is no GPU: the compile
must have worked; a stage that erred, hung or crashed ends the cell, and so does a load
that did not work; an artifact check or a budget that failed does not (on a GPU what the
bad build does there is evidence worth keeping). The worker saves the stages after each
step, so a worker that dies in a later one leaves those it finished and the crash is
recorded at the stage it was in.
"""

from __future__ import annotations

import json
import resource
import subprocess
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ...common.recorded import read_json
from ..cell.files import COMPILE_RECORD, CUBIN, LIBRARY, PTX, RESULT_FILE
from ..cell.job import Job
from ..cell.result import StageResult
from ..cell.sequence import GPU_STAGES, goes_on
from ..cell.steps import Carried, Step
from ..compile.built import Build
from ..frontends import frontend
from ..frontends.registry import Frontend
from ..inspect.stage import inspect_job, lowered_kernel
from ..process.hang import enter_stage, tool_timed_out

# Where a cell's load and run execute: its job (its kernel as the module names it), the
# module's PTX, cubin and shared library, to the load and run stages.
GpuPlace = Callable[[Job, Path | None, Path | None, Path | None], list[StageResult]]


class CompilerTime:
    """The CPU seconds a compile took: every compiler process it started and waited for
    (nvcc and what nvcc runs, ptxas, a build's commands), plus this process's own time in
    it (NVRTC and CuPy compile in-process). Summed over a cold run, divided by the cores,
    it is the floor bench/ compares the run with: the work no tool can avoid."""

    def __enter__(self) -> CompilerTime:
        self.children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.own = time.process_time()
        self.seconds = 0.0
        return self

    def __exit__(self, *_: object) -> None:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.seconds = round(after.ru_utime - self.children.ru_utime + after.ru_stime
                             - self.children.ru_stime + time.process_time() - self.own, 3)


def _timed(stage: StageResult, compiler: CompilerTime) -> StageResult:
    return replace(stage, details={**stage.details, "compiler_cpu_s": compiler.seconds})


def save_stages(job: Job, stages: list[StageResult]) -> None:
    """The stages so far, in the cell's folder, whole or not at all: a worker that dies in a
    later stage (a kernel that crashes the process, a driver that aborts) leaves the stages
    it finished, and the run records the crash at the stage it was in."""
    partial = job.work / f"{RESULT_FILE}.part"
    partial.write_text(json.dumps([s.to_dict() for s in stages]))
    partial.replace(job.work / RESULT_FILE)


# --- the compile result, four ways -------------------------------------------------------

def _built(carried: Carried, build: Build) -> list[StageResult]:
    carried.ptx, carried.cubin, carried.library = build.ptx, build.cubin, build.library
    return [build.result]


def fresh(compile_: Callable[[Job], Build]) -> Step:
    """The frontend's compile, run here; a compile that raised is the tool's error, not the
    code's (the loop records a compiler past the cell's limit as its timeout)."""

    def run(carried: Carried) -> list[StageResult]:
        try:
            build = compile_(carried.job)
        except subprocess.TimeoutExpired:
            raise
        except Exception as exc:  # the tool broke, not the code under test
            return [StageResult("compile", "error", f"{type(exc).__name__}: {exc}",
                                traceback.format_exc())]
        return _built(carried, build)

    return Step("compile", run, measured=True, recorded=True)


def _in_folder(folder: Path, stage: StageResult) -> Build:
    def found(name: str) -> Path | None:
        return folder / name if (folder / name).exists() else None

    return Build(stage, found(PTX), found(CUBIN), found(LIBRARY))


# How large a compile record may be: a stage's log and details (a results file's cell is
# bounded alike).
RECORD_BYTES = 64 << 20


def recorded() -> Step:
    """The compile record and module in the job's `prebuilt` folder: an earlier run's
    (another machine's), a compile-cache hit's or a group compile's, restored there."""

    def run(carried: Carried) -> list[StageResult]:
        folder = Path(carried.job.prebuilt or "")
        path = folder / COMPILE_RECORD
        try:
            stage = StageResult.from_dict(read_json(path, RECORD_BYTES))
        except (ValueError, KeyError, TypeError) as exc:  # damaged: the cell's error, said
            return [StageResult("compile", "error", f"{path}: no compile record ({exc})")]
        return _built(carried, _in_folder(folder, stage))

    return Step("compile", run)


def given(stage: StageResult) -> Step:
    """A compile stage already decided (a cache hit, a group's shared compile), its module
    in the cell's folder."""
    return Step("compile", lambda carried: _built(carried, _in_folder(carried.job.work, stage)))


# --- the steps after it -------------------------------------------------------------------

def inspect_step() -> Step:
    """Is the module what the case says it must be (inspect/stage.py)? Nothing to say
    where the case asks nothing of it."""

    def run(carried: Carried) -> list[StageResult]:
        compiled = carried.stages[0].details if carried.stages else {}
        inspected = inspect_job(carried.job, carried.ptx, carried.cubin, compiled)
        return [inspected] if inspected is not None else []

    return Step("inspect", run)


def in_this_process(job: Job, ptx: Path | None, cubin: Path | None,
                    library: Path | None) -> list[StageResult]:
    """The load and run stages in this process, in a context of its own."""
    from ..device.load_run import load_and_run

    return load_and_run(job, ptx, cubin, library)


def gpu_step(place: GpuPlace) -> Step:
    """The module loaded and its kernel (or host entry) run, at `place`, with the kernel
    as the inspect found it in the module."""

    def run(carried: Carried) -> list[StageResult]:
        job = lowered_kernel(carried.job, carried.last("inspect"))
        return place(job, carried.ptx, carried.cubin, carried.library)

    return Step("load", run, gpu=True)


def standard(compile_: Step, place: GpuPlace = in_this_process) -> list[Step]:
    """A module-building frontend's steps: its compile, the inspect, the load and run."""
    return [compile_, inspect_step(), gpu_step(place)]


def steps_for(job: Job, spec: Frontend | None = None) -> list[Step]:
    """The cell's steps: its frontend's own, or the standard ones around its compile; a
    prebuilt job's compile taken from its folder."""
    spec = spec or frontend(job.frontend)
    if spec.steps is not None:
        steps = list(spec.steps(job))
    else:
        assert spec.compile is not None
        steps = standard(fresh(spec.compile))
    if job.prebuilt:
        steps = [recorded() if s.stage == "compile" else s for s in steps]
    return steps


def _stopped(job: Job, stopped: subprocess.TimeoutExpired, began: float) -> StageResult:
    """The stage a tool stopped at the cell's limit ends with: what the tool printed
    (run_tool keeps it on the exception, its command line first) and the seconds the stage
    ran."""
    printed = stopped.output if isinstance(stopped.output, str) else ""
    return tool_timed_out(job.work, job.timeout, printed, time.monotonic() - began)


# --- the loop -------------------------------------------------------------------------------

def run_steps(carried: Carried, steps: Sequence[Step], *, in_worker: bool = True
              ) -> list[StageResult]:
    """Each step in order while `goes_on` says so (a GPU step only where the job has its
    GPU stages here). In a cell's worker (`in_worker`), each step's stage is noted before
    it runs and the stages saved after it; in the run's process nothing is written."""
    job = carried.job
    for step in steps:
        if not goes_on(carried.stages):
            break
        if step.gpu and not job.gpu_stages:
            continue
        if in_worker:
            enter_stage(job.work, step.stage)
        began = time.monotonic()
        try:
            with CompilerTime() as compiler:
                said = list(step.run(carried))
        except subprocess.TimeoutExpired as stopped:  # a tool it ran, stopped at the limit
            said = [_stopped(job, stopped, began)]
        else:
            if step.measured and said:
                said[0] = _timed(said[0], compiler)
            if in_worker and step.recorded and said and said[0].status == "ok":
                (job.work / COMPILE_RECORD).write_text(json.dumps(said[0].to_dict()))
        carried.stages.extend(said)
        if in_worker:
            save_stages(job, carried.stages)
    return carried.stages


def run_gpu_steps(job: Job, stages: list[StageResult], place: GpuPlace) -> list[StageResult]:
    """The rest of a cell whose worker stopped before its GPU steps (run with no GPU stages
    there): the same loop, its load and run at `place` (a GPU's server), the module as the
    worker left it in the cell's folder."""
    module = _in_folder(job.work, stages[0]) if stages else None
    carried = Carried(job, list(stages), *((module.ptx, module.cubin, module.library)
                                           if module else (None, None, None)))
    return run_steps(carried, [gpu_step(place)], in_worker=False)


def without_gpu(stages: list[StageResult], reason: str) -> list[StageResult]:
    """A cell of a run with no GPU: where it would go on to its load, the load is skipped,
    saying why (what the case expects of the GPU cannot be checked here)."""
    if stages and goes_on(stages) and not any(s.stage in GPU_STAGES for s in stages):
        return [*stages, StageResult("load", "skipped", reason)]
    return stages


def served_by_gpu_server(job: Job) -> bool:
    """Whether a GPU's server runs this cell's GPU stages: a module the tool built, loaded
    and launched by the driver API. What runs code of its own in a process keeps that
    process (and its own context): a frontend with steps of its own (CuPy, a build case's
    test command) and a built library's host entry."""
    spec = frontend(job.frontend)
    return spec.compile is not None and not job.host_entry and not job.group


# --- a group's one compile --------------------------------------------------------------------

def compile_group(job: Job) -> list[StageResult]:
    """The compile stages of a group's cells, each with its share of the compilers' CPU
    time and its record in its own folder (each cell then goes on from its `recorded` or
    `given` compile); or the one stage saying why they are to be built apart."""
    together = frontend(job.frontend).compile_together
    assert together is not None
    enter_stage(job.work, "compile")
    began = time.monotonic()
    try:
        with CompilerTime() as compiler:
            stages = together(job)
    except subprocess.TimeoutExpired as stopped:
        return [_stopped(job, stopped, began)]
    if len(stages) != len(job.group):
        return stages
    share = round(compiler.seconds / len(stages), 3)
    stages = [replace(s, details={**s.details, "compiler_cpu_s": share}) for s in stages]
    for member, stage in zip(job.group, stages, strict=True):
        if stage.status == "ok":  # as a cell's own compile leaves it: --prebuilt reads it
            (Path(member["workdir"]) / COMPILE_RECORD).write_text(json.dumps(stage.to_dict()))
    return stages


def run_cell(job: Job) -> list[StageResult]:
    """The cell's stages in this process (its worker), from its compile to its run: its
    group's one compile, or its steps."""
    if job.group:
        return compile_group(job)
    return run_steps(Carried(job), steps_for(job))
