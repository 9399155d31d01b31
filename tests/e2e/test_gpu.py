"""GPU stages on a real GPU; skipped, with the reason, where there is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import has_gpu
from cudamatrix.orchestrator.gpu import probe

pytestmark = pytest.mark.gpu


@pytest.mark.skipif(not has_gpu(), reason=f"no GPU: {probe().reason}")
def test_ptx_jit_and_run_on_the_gpu(run_cli, tmp_path: Path) -> None:
    run = run_cli("run", "--case", "ptx-driver-jit", "--case", "smem-oversize",
                  "--provider", "host", "--arch", "sm_90a", "--arch", "sm_90", out=tmp_path)
    cells = run.cells()
    # The host provider's toolkit (the machine's CUDA 13.0): the others are unavailable
    # there, and no order of the cells may decide which one a test reads.
    jit = cells[next(k for k in cells if k.startswith("ptx-driver-jit/") and "/13.0/" in k)]
    stages = {s["stage"]: s for s in jit["stages"]}
    assert list(stages)[-2:] == ["load", "run"], list(stages)
    assert stages["load"]["details"]["via"] == "ptx-jit" and stages["run"]["status"] == "ok"
    assert jit["prediction"]["agrees"] is True
    dynamic = cells[next(k for k in cells if k.startswith("smem-oversize/dynamic/")
                         and "/13.0/" in k and k.endswith("sm_90a"))]
    assert dynamic["outcome"] == "pass" and dynamic["reached"] == "run"


@pytest.mark.skipif(not has_gpu(), reason=f"no GPU: {probe().reason}")
def test_faults_cost_their_own_cell_through_the_gpu_server(run_cli, tmp_path: Path) -> None:
    """Issue 40: the faulting corpus (tests/data/gpu-faults) through the GPU's server and
    through a context per cell: the same outcome, stage and message for every cell (a
    device assert's first thread aside, which the GPU picks), each good kernel after a
    fault passing, each sticky fault replacing the server."""
    corpus = Path(__file__).parents[1] / "data" / "gpu-faults"
    args = ("run", "--corpus", str(corpus), "--case", "faults", "--provider", "host",
            "--toolkit", "13.0", "--arch", "sm_90")
    served = run_cli(*args, out=tmp_path / "served")
    own = run_cli(*args, "--context-per-cell", out=tmp_path / "own")
    for run in (served, own):
        assert run.code == 0, run.output[-3000:]
    for cell_id, cell in served.cells().items():
        other = own.cells()[cell_id]
        assert (cell["outcome"], cell["stage"]) == (other["outcome"], other["stage"]), cell_id
        if "assert" not in cell_id:
            assert cell["message"] == other["message"], cell_id
        if cell["outcome"] == "xfail" and "never" not in cell_id:
            load = next(s for s in cell["stages"] if s["stage"] == "load")
            assert load["details"]["server_replaced"].startswith("the context is broken")
    # Issue 60, point 2: each fault diagnosed by its own rule, from what the driver and the
    # process said; a kernel's assert named by its file, line and condition.
    rules = {cell["variant"]: (cell["diagnosis"] or {}).get("rule")
             for cell in served.cells().values() if cell["outcome"] != "pass"}
    assert rules == {"assert": "device-assert", "illegal-address": "illegal-address",
                     "misaligned": "misaligned-address", "trap": "kernel-trap",
                     "never-returns": "timeout"}, rules
    said = served.cells()["faults/assert/13.0/sm_90"]["diagnosis"]["title"]
    assert said == "The kernel's own check failed: assert(x[threadIdx.x] > 100.0f) at " \
        "faults.cu:33", said


@pytest.mark.skipif(not has_gpu(), reason=f"no GPU: {probe().reason}")
def test_a_kernel_is_timed_on_the_gpu(run_cli, tmp_path: Path) -> None:
    """Issue 41: bench/evidence/kernel-time-h100/corpus/saxpy timed by GPU events: a 4 MiB saxpy
    with a hot L2 no slower than with a cold one (the host's enqueueing is not timed), a
    256 MiB one no faster than the 4 MiB one, and max_us failing the cell over it."""
    corpus = Path(__file__).parents[2] / "bench" / "evidence" / "kernel-time-h100" / "corpus"
    run = run_cli("run", "--corpus", str(corpus), "--case", "saxpy", "--provider", "host",
                  "--toolkit", "13.0", "--arch", "sm_90", out=tmp_path)
    assert run.code == 0, run.output[-3000:]
    timed = {cell["variant"]: next(s for s in cell["stages"] if s["stage"] == "run")
             for cell in run.cells().values()}
    median = {v: s["details"]["timing"]["median_us"] for v, s in timed.items()}
    assert median["hot-4MiB"] <= median["cold-4MiB"] * 1.1
    assert median["cold-256MiB"] > 5 * median["cold-4MiB"]
    assert timed["budget-1us"]["status"] == "failed"
    assert "too slow: median" in timed["budget-1us"]["message"]
