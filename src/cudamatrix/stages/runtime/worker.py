"""A cell's own process: ``python -m cudamatrix.stages.runtime.worker < job.json``.

Every cell runs here, so a compiler that segfaults, a kernel that crashes the
context or a library that calls abort() ends this process and nothing else;
the orchestrator turns that into the cell's `crashed` or `timeout` result.
It writes the JSON list of stage results to ``stages.json`` in the cell's work
folder: stdout is left to the code under test (device printf lands there).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import traceback
from dataclasses import replace
from pathlib import Path

from ..cell.files import COMPILE_RECORD
from ..cell.job import Job
from ..cell.result import StageResult
from ..frontends import frontend
from ..inspect.stage import inspect_job, lowered_kernel
from ..process.hang import arm_stack_dump, enter_stage, tool_timed_out
from ..process.hermetic import make_this_process_hermetic
from ..process.library_path import library_first
from ..process.limits import kill_running_tools
from .pipeline import CompilerTime, _compile_together, _prebuilt, _timed, save_stages

PARENT_ENV = "CUDAMATRIX_PARENT_PID"
_PR_SET_PDEATHSIG = 1


def _stop_cell(*_: object) -> None:
    """SIGTERM: the cell is stopped; its compilers (each in a group of its own) and then
    its own group go, at once."""
    kill_running_tools()
    os.killpg(os.getpgrp(), signal.SIGKILL)


def die_with_parent(parent: int | None = None) -> None:
    """End this cell, compilers included, when the run that started it is killed.

    The worker leads its own process group (so a timeout can kill its compilers); a
    SIGKILLed run cannot clean up, so the kernel tells the worker instead, which then
    takes its whole group down rather than compiling on, orphaned, into a folder a
    resumed run is about to reuse.
    """
    signal.signal(signal.SIGTERM, _stop_cell)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return  # not Linux: the run's own clean-up is all there is
    expected = parent if parent is not None else os.environ.get(PARENT_ENV)
    if expected and os.getppid() != int(expected):  # the parent died before prctl took hold
        os.killpg(os.getpgrp(), signal.SIGKILL)


def run_stages(job: Job) -> list[StageResult]:
    """The cell's stages in this process, from its compile to its run."""
    spec = frontend(job.frontend)
    if job.library:  # a frontend that imports the library here sees nothing else
        library_first(job.library.python_path, isolated=spec.stages is not None)
    if spec.stages is not None:  # the frontend tells its whole story (CuPy, a build)
        with CompilerTime() as compiler:
            told = spec.stages(job)
        return [_timed(told[0], compiler), *told[1:]] if told else told
    if job.group:
        return _compile_together(job)
    assert spec.compile is not None
    stages: list[StageResult] = []
    enter_stage(job.work, "compile")
    try:
        with CompilerTime() as compiler:
            build = _prebuilt(job) if job.prebuilt else spec.compile(job)
    except subprocess.TimeoutExpired:
        return [tool_timed_out(job.work, job.timeout)]
    except Exception as exc:  # the tool broke, not the code under test
        return [StageResult("compile", "error", f"{type(exc).__name__}: {exc}",
                            traceback.format_exc())]
    if not job.prebuilt:
        build = replace(build, result=_timed(build.result, compiler))
    stages.append(build.result)
    if build.result.status != "ok":
        return stages
    (job.work / COMPILE_RECORD).write_text(json.dumps(build.result.to_dict()))
    save_stages(job, stages)
    # An artifact or budget failure decides the cell, but on a GPU the later stages still
    # run: what the bad build does there (a trap, a wrong result) is evidence worth keeping.
    enter_stage(job.work, "inspect")
    inspected = inspect_job(job, build.ptx, build.cubin, build.result.details)
    if inspected is not None:
        stages.append(inspected)
        if inspected.status == "error":  # the case names a kernel the module lacks
            return stages
        save_stages(job, stages)
    if job.gpu_stages:
        from ..device.load_run import load_and_run

        stages.extend(load_and_run(lowered_kernel(job, inspected), build.ptx, build.cubin,
                                   build.library))
    return stages


def run_job_file(path: str) -> None:
    make_this_process_hermetic()
    job = Job.from_json(Path(path).read_text())
    if job.gpu:  # the GPU the run lent this cell: its own process sees that one alone
        os.environ["CUDA_VISIBLE_DEVICES"] = job.gpu
    with arm_stack_dump(job.work, job.timeout):
        stages = run_stages(job)
    save_stages(job, stages)


def main() -> None:
    die_with_parent()
    run_job_file(sys.argv[1])


if __name__ == "__main__":
    main()
