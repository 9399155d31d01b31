"""A cell's worker that dies is recorded at the stage it was in, after the stages it
finished (issue 67: every crash was a compile crash, whatever stage the worker was in;
the GPU pool already recorded the real stage)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cudamatrix.orchestrator.executors.outcome import collect_stages
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.runtime.pipeline import save_stages

# A worker's own steps as a process: it finishes its compile and inspect, enters the load
# stage and is killed there (as a kernel that takes its process down would leave it).
DIES_IN_LOAD = """
import os, signal, sys
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.process.hang import enter_stage
from cudamatrix.stages.runtime.pipeline import save_stages
job = Job.from_json(open(sys.argv[1]).read())
enter_stage(job.work, "compile")
done = [StageResult("compile", "ok", "")]
save_stages(job, done)
enter_stage(job.work, "inspect")
save_stages(job, [*done, StageResult("inspect", "ok", "")])
enter_stage(job.work, "load")
os.kill(os.getpid(), signal.SIGSEGV)
"""


def _job(tmp_path: Path) -> Job:
    work = tmp_path / "cell"
    work.mkdir()
    return Job(cell_id="c/v/13.0/sm_90", arch="sm_90", source=str(tmp_path / "k.cu"),
               frontend="nvcc", workdir=str(work), timeout=60)


def test_a_worker_killed_in_its_load_stage_is_a_load_crash_after_its_compile(
        tmp_path: Path) -> None:
    job = _job(tmp_path)
    (tmp_path / "job.json").write_text(job.to_json())
    died = subprocess.run([sys.executable, "-c", DIES_IN_LOAD, str(tmp_path / "job.json")],
                          capture_output=True, text=True)
    assert died.returncode < 0
    stages = collect_stages(job, died.returncode, "killed by SIGSEGV", died.stderr)
    assert [(s.stage, s.status) for s in stages] == \
        [("compile", "ok"), ("inspect", "ok"), ("load", "crashed")]


def test_a_worker_that_dies_compiling_is_a_compile_crash(tmp_path: Path) -> None:
    job = _job(tmp_path)
    stages = collect_stages(job, -9, "killed by SIGKILL", "")
    assert [(s.stage, s.status) for s in stages] == [("compile", "crashed")]
    save_stages(job, [StageResult("compile", "ok", "")])
    assert [(s.stage, s.status) for s in collect_stages(job, 0, "exited", "")] \
        == [("compile", "ok")]
