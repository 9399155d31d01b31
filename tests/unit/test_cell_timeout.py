"""A cell stopped at its limit leaves something to debug (issue 82, item 1): the docs' own
torch-extension example ended `compiler ran past the cell's 300 s limit` with an empty
stage log and 0.0 stage seconds, and no word of what raises the limit. Here a build case
whose command prints two lines and then sleeps runs, for real, on a made-up host toolkit
under a 3 s limit: its record keeps the lines, the seconds and the option."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudamatrix.config.corpus import Variant
from cudamatrix.config.options import DEFAULT_CELL_TIMEOUT_S, RunOptions
from cudamatrix.orchestrator.cell_jobs import cell_limit
from cudamatrix.orchestrator.executors.outcome import timed_out
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.frontends.torch_extension import TIMEOUT_S as TORCH_LIMIT_S
from cudamatrix.stages.process.limits import left_output, run_tool

CASE = """\
title = "A build that prints and then hangs"

[[variant]]
name = "hangs"
frontend = "build"
  [variant.build]
  commands = ["echo configured", "sh -c 'echo step one; echo step two; exec sleep 60'"]
  outputs = ["*.so"]
"""


def _fake_toolkit(root: Path) -> Path:
    """A CUDA 13.0 install as the host provider reads one (nothing here compiles)."""
    for tool in ("nvcc", "ptxas"):
        path = root / "bin" / tool
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
        path.chmod(0o755)
    (root / "lib64").mkdir()
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime.h").write_text("#pragma once\n")
    return root


def test_a_timed_out_build_keeps_what_it_printed_its_seconds_and_the_option(
        tmp_path: Path) -> None:
    corpus = tmp_path / "corpus" / "slow"
    corpus.mkdir(parents=True)
    (corpus / "case.toml").write_text(CASE)
    env = {**os.environ, "CUDA_HOME": str(_fake_toolkit(tmp_path / "cuda")), "CI": "1"}
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "cudamatrix", "run", "--corpus", str(tmp_path / "corpus"),
         "--case", "slow", "--toolkit", "13.0", "--arch", "sm_90", "--provider", "host",
         "--no-gpu", "--cell-timeout", "3", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    said = run.stdout + run.stderr
    assert "--cell-timeout" in said, said[-2000:]
    cell = json.loads((out / "results.json").read_text())["cells"][0]
    stage = cell["stages"][-1]
    assert (stage["stage"], stage["status"]) == ("compile", "timeout")
    assert "--cell-timeout" in cell["message"]
    # What the build printed, its commands as they ran, in order: where it was.
    assert stage["log"].splitlines() == [
        "$ echo configured", "configured",
        "$ sh -c 'echo step one; echo step two; exec sleep 60'", "step one", "step two"]
    assert 2.9 <= stage["seconds"] < 10


def test_run_tool_past_its_limit_says_what_the_tool_printed(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired) as stopped:
        run_tool(["sh", "-c", "echo compiling a.cu; echo warning >&2; exec sleep 30"], 1.0,
                 cwd=tmp_path)
    assert [line for line in stopped.value.output.splitlines() if line] == [
        "$ sh -c 'echo compiling a.cu; echo warning >&2; exec sleep 30'",
        "compiling a.cu", "warning"]


@pytest.mark.parametrize("case_timeout, flag, frontend_name, limit", [
    (None, None, "torch-extension", TORCH_LIMIT_S),  # minutes of compiling: its own limit
    (None, None, "nvcc", DEFAULT_CELL_TIMEOUT_S),
    (None, 60.0, "torch-extension", 60.0),  # --cell-timeout says so, for every frontend
    (100.0, 60.0, "torch-extension", 100.0),  # the case's own comes first
])
def test_a_cells_limit_is_its_frontends_own_unless_the_case_or_the_run_sets_one(
        case_timeout: float | None, flag: float | None, frontend_name: str,
        limit: float) -> None:
    """The docs' torch-extension example met the run's one 300 s limit, where it needed
    469 s on a loaded laptop: a frontend that compiles for minutes has a limit of its own."""
    variant = Variant("v", source=Path("."), frontend=frontend_name, timeout=case_timeout)
    assert cell_limit(variant, RunOptions(cell_timeout=flag), frontend_name) == limit


def test_a_worker_killed_from_outside_leaves_what_its_tool_printed(tmp_path: Path) -> None:
    """Past its limit and the grace after it, a cell's worker is killed from outside (a
    worker stuck where its own limit cannot act): what the tool it ran had printed is read
    back from the files run_tool streams it to, in the cell's folder."""
    work = tmp_path / "cell"
    work.mkdir()
    worker = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; "
         "from cudamatrix.stages.process.limits import run_tool; "
         "run_tool(['sh', '-c', 'echo compiling a.cu; echo nvcc warning >&2; exec sleep 60'],"
         " 120, cwd=Path(sys.argv[1]))", str(work)],
        start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while "compiling a.cu" not in left_output([work]) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)  # the worker and its tool, as a stopped cell
        worker.wait()
    job = Job(cell_id="c/v/13.0/sm_90", arch="sm_90", source=str(tmp_path), frontend="nvcc",
              workdir=str(work), timeout=3)
    stage = timed_out(job)
    assert "compiling a.cu" in stage.log and "nvcc warning" in stage.log, stage.log
    assert "--cell-timeout" in stage.message
