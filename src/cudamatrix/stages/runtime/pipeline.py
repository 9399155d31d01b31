"""A cell's pipeline: the parts of its stage sequence the worker and the executors share
(moved here from worker.py and executors/local.py; issue 67)."""

from __future__ import annotations

import json
import resource
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from ..cell.files import COMPILE_RECORD, CUBIN, LIBRARY, PTX, RESULT_FILE
from ..cell.job import Job
from ..cell.result import StageResult
from ..compile.built import Build
from ..frontends import frontend
from ..process.hang import enter_stage, tool_timed_out


def _prebuilt(job: Job) -> Build:
    """The compile stage of an earlier run (another machine's), with its artifacts."""
    folder = Path(job.prebuilt or "")
    stage = StageResult.from_dict(json.loads((folder / COMPILE_RECORD).read_text()))

    def found(name: str) -> Path | None:
        return folder / name if (folder / name).exists() else None

    return Build(stage, found(PTX), found(CUBIN), found(LIBRARY))


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


def _compile_together(job: Job) -> list[StageResult]:
    """The compile stages of a group's cells, each with its share of the compilers' CPU
    time and its record in its own folder (the run then goes on with each as with an
    earlier run's build); or the one stage saying why they are to be built apart."""
    together = frontend(job.frontend).compile_together
    assert together is not None
    enter_stage(job.work, "compile")
    try:
        with CompilerTime() as compiler:
            stages = together(job)
    except subprocess.TimeoutExpired:
        return [tool_timed_out(job.work, job.timeout)]
    if len(stages) != len(job.group):
        return stages
    share = round(compiler.seconds / len(stages), 3)
    stages = [replace(s, details={**s.details, "compiler_cpu_s": share}) for s in stages]
    for member, stage in zip(job.group, stages, strict=True):
        if stage.status == "ok":  # as a cell's own compile leaves it: --prebuilt reads it
            (Path(member["workdir"]) / COMPILE_RECORD).write_text(json.dumps(stage.to_dict()))
    return stages


def served_by_gpu_server(job: Job) -> bool:
    """Whether a GPU's server runs this cell's GPU stages: a module the tool built, loaded
    and launched by the driver API. What runs code of its own in a process keeps that
    process (and its own context): a frontend that tells its whole story (CuPy, a build
    case's test command) and a built library's host entry."""
    return frontend(job.frontend).stages is None and not job.host_entry and not job.group


def wants_gpu_stages(stages: list[StageResult]) -> bool:
    """The worker stopped where its own process would have gone on to the GPU: a compile
    that worked, and no inspect that found the case's own error (an artifact or budget
    failure still runs on the GPU: what the build does there is evidence)."""
    return bool(stages) and stages[0].stage == "compile" and stages[0].status == "ok" \
        and all(s.status != "error" for s in stages) \
        and not any(s.stage in ("load", "run") for s in stages)
