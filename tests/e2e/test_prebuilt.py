"""--prebuilt: a run takes each cell's compile from an earlier run's folder (another
machine's, as the GPU runs do) and judges it again: the same verdicts, that run's
versions, and a cell it never built said so. Real NVRTC (the 12.4 and 13.0 wheels)."""

from __future__ import annotations

from pathlib import Path

from conftest import cudamatrix


def test_a_prebuilt_run_gives_the_earlier_runs_verdicts(tmp_path: Path) -> None:
    selection = ("--case", "smem-oversize", "--toolkit", "12.4", "--toolkit", "13.0",
                 "--arch", "sm_80")
    built = cudamatrix("run", *selection, out=tmp_path / "built")
    assert built.code == 0, built.output[-2000:]
    again = cudamatrix("run", *selection, "--toolkit", "12.9", "--prebuilt",
                       str(tmp_path / "built"), out=tmp_path / "again")
    before, after = built.cells(), again.cells()
    for cell_id, cell in before.items():
        assert (after[cell_id]["outcome"], after[cell_id]["message"]) == \
            (cell["outcome"], cell["message"]), cell_id
        assert after[cell_id]["versions"] == cell["versions"], cell_id
    missing = [c for i, c in after.items() if "/12.9/" in i]
    assert missing and all(c["outcome"] == "skip" and c["message"] ==
                           f"not built in {tmp_path / 'built'}" for c in missing)
