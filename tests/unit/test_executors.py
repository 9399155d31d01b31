"""The local executor against a toy frontend (no compiler): what a cell's worker did
comes back as its stages, whether it finished, crashed or printed, and a stopped
executor starts nothing more (a hung one: tests/e2e/test_hang.py, as it takes its limit
plus the grace the worker has to say where it was)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.orchestrator.executors import Executor
from cudamatrix.orchestrator.executors.local import LocalExecutor
from cudamatrix.stages.cell.job import Job

TOY = '''
import os, signal, sys
from cudamatrix.stages.frontends import Frontend, register
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.cell.steps import Step


def build(carried):
    job = carried.job
    what = job.options["do"]
    if what == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if what == "talk":
        print("error: the toy kernel said no", file=sys.stderr, flush=True)
        return [StageResult("compile", "failed", "toy compile failed")]
    return [StageResult("compile", "ok", "", f"built {job.cell_id}")]


register(Frontend("toy-executor", steps=lambda job: [Step("compile", build)],
                  toolkit_free=True, cached=False))
'''


@pytest.fixture
def executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "toy_executor.py").write_text(TOY)
    monkeypatch.setenv("CUDAMATRIX_FRONTENDS", "toy_executor")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "plugins"))
    made: Executor = LocalExecutor()
    yield made
    made.close()


def _job(tmp_path: Path, what: str) -> Job:
    work = tmp_path / what
    work.mkdir()
    return Job(cell_id=f"toy/{what}", arch="sm_80", source=str(tmp_path), frontend="toy-executor",
               workdir=str(work), timeout=60, options={"do": what}, gpu_stages=False)


def test_finished_worker_gives_its_stages(executor: Executor, tmp_path: Path) -> None:
    stages = executor.run(_job(tmp_path, "ok"))
    assert [(s.stage, s.status) for s in stages] == [("compile", "ok")]
    assert stages[0].log == "built toy/ok"


def test_what_a_worker_printed_joins_its_last_stage(executor: Executor, tmp_path: Path) -> None:
    stages = executor.run(_job(tmp_path, "talk"))
    assert stages[-1].status == "failed"
    assert "the toy kernel said no" in stages[-1].message
    assert "--- process output ---" in stages[-1].log


def test_crashed_worker_is_one_crashed_stage(executor: Executor, tmp_path: Path) -> None:
    stages = executor.run(_job(tmp_path, "crash"))
    assert [(s.stage, s.status) for s in stages] == [("compile", "crashed")]
    assert stages[0].message == "cell worker killed by SIGSEGV"


def test_stopped_executor_starts_nothing(executor: Executor, tmp_path: Path) -> None:
    executor.stop()
    with pytest.raises(KeyboardInterrupt):
        executor.run(_job(tmp_path, "ok"))


def test_container_paths_are_found_through_a_linked_cache(tmp_path: Path) -> None:
    """A cache folder reached through a link (the e2e tests' own caches, ~/.cache on another
    disk) is mounted by its real path: the job's paths must still land inside the mount."""
    from cudamatrix.orchestrator.executors.containers import Mount, translate
    from cudamatrix.stages.cell.environment import LibraryEnvironment

    real = tmp_path / "disk" / "libraries"
    (real / "cute_dsl-4.8.1").mkdir(parents=True)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "libraries").symlink_to(real)
    linked = tmp_path / "cache" / "libraries" / "cute_dsl-4.8.1"
    job = Job(cell_id="c", arch="sm_80", source=str(tmp_path), frontend="nvrtc",
              workdir=str(tmp_path), timeout=1,
              library=LibraryEnvironment("cute_dsl", "4.8.1", str(linked), (), (str(linked),)))
    inside = translate(job, [Mount(str(real.resolve()), "/work/libraries")])
    assert inside.library is not None
    assert inside.library.python_path == ("/work/libraries/cute_dsl-4.8.1",)


def test_two_lines_in_one_read_are_two_lines() -> None:
    """The server sends a worker's pid, then its exit status; a worker that ends at once
    can get both into one read ('16850\\n0\\n'), which once failed the cell's parent with
    ValueError: invalid literal for int()."""
    import socket

    from cudamatrix.orchestrator.executors.local import _Lines

    ours, theirs = socket.socketpair()
    theirs.sendall(b"16850\n0\n")
    lines = _Lines(ours)
    assert (lines.read(), lines.read()) == ("16850", "0")
    ours.close()
    theirs.close()


def test_the_cells_of_a_shared_build_are_found_in_the_container(tmp_path: Path) -> None:
    """One nvcc for several archs writes each cell's files into its own folder: in a
    container each of those folders is where the mount puts it, as the job's own is (the
    host's paths were once handed in unchanged, and the worker wrote outside every mount)."""
    from cudamatrix.orchestrator.executors.containers import Mount, translate

    out = tmp_path / "out"
    members = tuple({"cell_id": f"c/{a}", "arch": a, "workdir": str(out / "artifacts" / a)}
                    for a in ("sm_90", "sm_90a"))
    job = Job(cell_id="c/sm_90", arch="sm_90", source=str(tmp_path), frontend="nvcc",
              workdir=str(out / "artifacts" / "sm_90.together"), timeout=1, group=members)
    inside = translate(job, [Mount(str(out), "/work/out")])
    assert inside.workdir == "/work/out/artifacts/sm_90.together"
    assert [m["workdir"] for m in inside.group] == ["/work/out/artifacts/sm_90",
                                                    "/work/out/artifacts/sm_90a"]
