"""CuPy's Jitify warm-up runs once per CuPy version and toolkit (issue 15): every jitify
cell of the run gets a copy of its warmed headers, or shares its time-out. The warm-up
itself needs a GPU (CuPy asks the driver first); its real run is in reports/."""

from __future__ import annotations

import threading
from pathlib import Path

from cudamatrix.orchestrator.cupy_warmup import DONE_FILE, JitifyWarmups
from cudamatrix.providers import LibraryEnvironment
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult


def _job(tmp_path: Path, cell: str) -> Job:
    work = tmp_path / "out" / "artifacts" / cell
    work.mkdir(parents=True)
    return Job(cell_id=cell, arch="sm_90a", source="k.cu", frontend="cupy", workdir=str(work),
               timeout=150, options={"jitify": True},
               library=LibraryEnvironment("cupy", "14.2.0", "(this Python)"))


def test_one_warm_up_seeds_every_cell_and_a_hang_is_shared(tmp_path: Path) -> None:
    calls: list[Job] = []

    def warm(job: Job) -> list[StageResult]:
        calls.append(job)
        assert job.options["jitify_warmup"] and job.timeout == 900 and not job.run
        (job.work / "cupy-cache").mkdir()
        (job.work / "cupy-cache" / "jitify_x.json").write_text('{"headers": 1}')
        return [StageResult("compile", "ok")]

    warmups = JitifyWarmups(tmp_path / "cache", tmp_path / "out", 900, warm, lambda _: None)
    jobs = [_job(tmp_path, f"c{n}") for n in range(4)]
    seeded: list[Job | StageResult] = []
    threads = [threading.Thread(target=lambda j=j: seeded.append(warmups.prepare(j)))
               for j in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1  # four cells, one warm-up
    folder = tmp_path / "cache" / "cupy-jitify" / JitifyWarmups.key(jobs[0])
    assert (folder / DONE_FILE).is_file() and (folder / "jitify_x.json").is_file()
    assert all(isinstance(j, Job) and j.options["jitify_seed"] == str(folder) for j in seeded)
    # The next run finds it in the cache and runs none.
    again = JitifyWarmups(tmp_path / "cache", tmp_path / "out", 900, warm, lambda _: None)
    assert isinstance(again.prepare(_job(tmp_path, "c9")), Job) and len(calls) == 1

    def hang(job: Job) -> list[StageResult]:
        calls.append(job)
        return [StageResult("compile", "timeout", "cell ran past its 900 s limit and was "
                            "killed; it was in compiler.py:298 in _jitify_prep")]

    hung = JitifyWarmups(tmp_path / "other-cache", tmp_path / "out", 900, hang, lambda _: None)
    first, second = (hung.prepare(_job(tmp_path, f"h{n}")) for n in range(2))
    assert isinstance(first, StageResult) and first is second and len(calls) == 2
    assert first.status == "timeout" and "Jitify warm-up" in first.message
    assert "_jitify_prep" in first.message
    assert not (tmp_path / "other-cache" / "cupy-jitify").exists() or not any(
        (tmp_path / "other-cache" / "cupy-jitify").glob(f"*/{DONE_FILE}"))
