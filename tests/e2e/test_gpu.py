"""GPU stages on a real GPU; skipped, with the reason, where there is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import has_gpu
from cudamatrix.gpu import probe

pytestmark = pytest.mark.gpu


@pytest.mark.skipif(not has_gpu(), reason=f"no GPU: {probe().reason}")
def test_ptx_jit_and_run_on_the_gpu(run_cli, tmp_path: Path) -> None:
    run = run_cli("run", "--case", "ptx-driver-jit", "--case", "smem-oversize",
                  "--provider", "host", "--arch", "sm_90a", "--arch", "sm_90", out=tmp_path)
    cells = run.cells()
    jit = cells[next(k for k in cells if k.startswith("ptx-driver-jit/"))]
    assert [s["stage"] for s in jit["stages"]] == ["compile", "load", "run"]
    assert jit["prediction"]["agrees"] is True
    dynamic = cells[next(k for k in cells if k.startswith("smem-oversize/dynamic/")
                         and k.endswith("sm_90a"))]
    assert dynamic["outcome"] == "pass" and dynamic["reached"] == "run"
