"""The torch-extension frontend's steps (stages/frontends/torch_extension.py), as the
pipeline's loop runs them: its stage list was verified on an H100 (bench/evidence/
torch-ext/h100: compile, inspect, load, run) when it was one callable around the loop; as
steps it must stay that list. A change to it fails here (the compiles themselves:
tests/e2e/test_torch_extension*.py, with real torch headers and nvcc)."""

from __future__ import annotations

from pathlib import Path

from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.cell.steps import Carried
from cudamatrix.stages.runtime.pipeline import run_steps, steps_for


def _job(tmp_path: Path, **settings: object) -> Job:
    work = tmp_path / "cell"
    work.mkdir(exist_ok=True)
    return Job(cell_id="scale/scale/13.0/sm_90/torch-2.5.1", arch="sm_90",
               source=str(tmp_path / "scale.cu"), frontend="torch-extension",
               workdir=str(work), timeout=60, **settings)  # type: ignore[arg-type]


def test_its_steps_are_compile_inspect_then_load_and_run(tmp_path: Path) -> None:
    """Compile (measured: its compilers' CPU time; no compile record: its compiles are not
    cached and no --prebuilt takes them), inspect, and one GPU step that imports the
    library and makes the call (one process: the call needs what the import made)."""
    steps = steps_for(_job(tmp_path))
    assert [(s.stage, s.gpu, s.measured, s.recorded) for s in steps] == [
        ("compile", False, True, False), ("inspect", False, False, False),
        ("load", True, False, False)]


def test_a_cell_without_its_torch_ends_at_its_compile(tmp_path: Path) -> None:
    """The loop's rule on the frontend's real steps: a compile that did not work (here
    no torch library axis) ends the cell, before any inspect or GPU step."""
    job = _job(tmp_path)
    stages = run_steps(Carried(job), steps_for(job))
    assert [(s.stage, s.status) for s in stages] == [("compile", "error")]
    assert "needs the torch library axis" in stages[0].message
    assert "compiler_cpu_s" in stages[0].details


def test_objects_not_linked_have_nothing_to_load(tmp_path: Path) -> None:
    """A wheel's headers build objects, not a library: on a GPU the cell ends at its
    inspect, as it did before its stages were steps (no load, no run)."""
    job = _job(tmp_path)
    load = steps_for(job)[2]
    compiled = StageResult("compile", "ok", "not linked", details={
        "outputs": [str(job.work / "objects" / "0-scale.o"),
                    str(job.work / "objects" / "1-binding.o")]})
    carried = Carried(job, [compiled, StageResult("inspect", "ok")])
    assert list(load.run(carried)) == []
