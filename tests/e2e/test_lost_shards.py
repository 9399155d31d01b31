"""One bad shard costs its own cells, never the night's report (issue 11, point 11)."""

from __future__ import annotations

import json
import shlex
import shutil
import time
from pathlib import Path

from conftest import cudamatrix, write_case
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.options import RunOptions
from cudamatrix.config.planning import make_plan
from cudamatrix.orchestrator.cell_runner import CellRunner

KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n'
CASE = """
    title = "{name}"
    [[variant]]
    name = "v"
    source = "k.cu"
    frontend = "nvrtc"
"""


def test_merge_reports_lost_and_broken_shards_and_still_publishes(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    for name in ("one", "two"):
        write_case(corpus, name, CASE.format(name=name), {"k.cu": KERNEL})
    selection = ["--corpus", str(corpus), "--case", "one", "--case", "two", "--toolkit", "12.4",
                 "--arch", "sm_80", "--arch", "sm_90"]
    plan = cudamatrix("plan", "--cpu", "--cells-per-job", "1", *selection)
    assert plan.code == 0, plan.output[-2000:]
    jobs = json.loads(plan.output.strip().splitlines()[-1])["include"]
    assert len(jobs) == 4
    (tmp_path / "plan.json").write_text(json.dumps({"include": jobs}))
    shards = tmp_path / "shards"
    for job in jobs[:3]:
        # As the workflow runs a shard: its job's label names the runner.
        run = cudamatrix("run", *shlex.split(job["args"]), out=shards / job["artifact"],
                         env={"CUDAMATRIX_RUNNER_LABEL": job["label"]})
        assert run.code == 0, run.output[-2000:]
    # Shard 2 died after saving its cell, before results.json; shard 3 left a broken
    # results.json and nothing else; shard 4 never uploaded anything.
    (shards / jobs[1]["artifact"] / "results.json").unlink()
    shutil.rmtree(shards / jobs[2]["artifact"] / "cells")
    (shards / jobs[2]["artifact"] / "results.json").write_text('{"schema": ')

    merged = cudamatrix("merge", *(str(p) for p in sorted(shards.iterdir())),
                        "--plan", str(tmp_path / "plan.json"), out=tmp_path / "site")
    assert merged.code == 1, merged.output[-2000:]
    assert "Traceback" not in merged.output
    assert (tmp_path / "site" / "report.html").exists()
    cells = merged.cells()
    assert len(cells) == 4
    outcomes = sorted(c["outcome"] for c in cells.values())
    assert outcomes == ["error", "error", "pass", "pass"]
    lost = {c["message"] for c in cells.values() if c["outcome"] == "error"}
    assert any(jobs[2]["name"] in m and "not JSON" in m for m in lost), lost
    assert any(jobs[3]["name"] in m and "never arrived" in m for m in lost), lost
    errors = merged.results["run"]["environment_errors"]
    assert any("cells recovered from cells/" in v for v in errors.values()), errors

    # Without the plan, the broken shards still give what they saved.
    plain = cudamatrix("merge", *(str(p) for p in sorted(shards.iterdir())),
                       out=tmp_path / "plain")
    assert plain.code == 0, plain.output[-2000:]
    assert len(plain.cells()) == 2
    # Issue 49: a merge that drops a damaged shard says so on the console too.
    warned = [line for line in plain.output.splitlines() if line.startswith("warning: shard ")]
    assert any(jobs[2]["artifact"] in line for line in warned), plain.output[-2000:]


def test_the_run_timeout_counts_from_the_start_of_the_run(tmp_path: Path) -> None:
    options = RunOptions(run_timeout=60)
    plan = make_plan(options)
    begun_long_ago = time.monotonic() - 61  # set-up took longer than the whole limit
    runner = CellRunner(plan, options, envs=None, device=None, executor=None,  # type: ignore[arg-type]
                        started=begun_long_ago, ledger=InputLedger())
    assert runner.out_of_time()
    fresh = CellRunner(plan, options, envs=None, device=None, executor=None,  # type: ignore[arg-type]
                       started=time.monotonic(), ledger=InputLedger())
    assert not fresh.out_of_time()
