"""A cell's own process: ``python -m cudamatrix.stages.runtime.worker < job.json``.

Every cell runs here, so a compiler that segfaults, a kernel that crashes the
context or a library that calls abort() ends this process and nothing else;
the orchestrator turns that into the cell's `crashed` or `timeout` result.
It writes the JSON list of stage results to ``stages.json`` in the cell's work
folder, after each step (pipeline.py decides the steps): stdout is left to the code
under test (device printf lands there).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path

from ..cell.job import Job
from ..cell.result import StageResult
from ..frontends import frontend
from ..process.hang import arm_stack_dump
from ..process.hermetic import make_this_process_hermetic
from ..process.library_path import library_first
from ..process.limits import kill_running_tools
from .pipeline import run_cell, save_stages

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
    """The cell's stages in this process, from its compile to its run (pipeline.py)."""
    if job.library:  # a frontend that imports the library here sees nothing else
        library_first(job.library.python_path,
                      isolated=frontend(job.frontend).compile is None)
    return run_cell(job)


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
