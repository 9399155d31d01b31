"""Issue 47 on a GPU: a verdict is the build's own, whatever cache or cell came first.
Skipped, with the reason, where there is no GPU (bench/evidence/hermetic-h100 holds the H100's
run of the same cases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import has_gpu
from cudamatrix.orchestrator.gpu import probe

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not has_gpu(), reason=f"no GPU: {probe().reason}")]
CORPUS = Path(__file__).parents[1] / "data" / "hermetic"


def test_an_nvrtc_budget_is_judged_the_same_every_time(run_cli, tmp_path: Path) -> None:
    """NVRTC >= 12.9 with a driver answered the second compile from ~/.nv/ComputeCache,
    printing no ptxas figures: the budget became a case error on every later run."""
    outcomes = []
    for number in range(2):
        run = run_cli("run", "--corpus", str(CORPUS), "--case", "budget", "--provider", "host",
                      "--toolkit", "13.0", "--arch", "sm_90", "--no-compile-cache", "--cache",
                      str(tmp_path / f"cache{number}"), out=tmp_path / f"out{number}")
        assert run.code == 0, run.output[-3000:]
        outcomes.append({i: (c["outcome"], c["message"]) for i, c in run.cells().items()})
        for cell in run.cells().values():
            assert cell["stages"][0]["details"]["resources"], cell["id"]
    assert outcomes[0] == outcomes[1]
    assert {o for o, _ in outcomes[0].values()} == {"pass"}


def test_readmes_saxpy_and_a_heap_hog_before_another_cell(run_cli, tmp_path: Path) -> None:
    """README's saxpy as written passes; a cell that took the whole device heap leaves
    the next cell of the same server a heap of its own."""
    run = run_cli("run", "--corpus", str(CORPUS), "--case", "readme-saxpy", "--case",
                  "device-heap", "--provider", "host", "--toolkit", "13.0", "--arch", "sm_90",
                  "-j", "1",
                  out=tmp_path)
    assert run.code == 0, run.output[-3000:]
    for cell in run.cells().values():
        assert cell["outcome"] == "pass", (cell["id"], cell["message"])
