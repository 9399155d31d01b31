"""Issue 48: every cell accounted for. A cell the matrix rules out (sm_90a before CUDA
12.0) was said once on the console and then vanished: COMPATIBILITY.md dropped its column
without a reason, results.json had no record, `cudamatrix list` dropped it. It is a skip
with its reason, everywhere a cell is."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ADD_KERNEL, cudamatrix, write_case

CASE = """\
title = "one kernel"

[[variant]]
name = "nvrtc"
source = "k.cu"
frontend = "nvrtc"
kernel = "add"
"""


def test_a_cell_the_matrix_rules_out_is_a_skip_with_its_reason(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", "ruled", CASE, {"k.cu": ADD_KERNEL})
    selection = ("--corpus", str(tmp_path / "cases"), "--case", "ruled", "--toolkit", "11.8",
                 "--toolkit", "12.4", "--arch", "sm_90a")
    listed = cudamatrix("list", *selection)
    assert "ruled/nvrtc/11.8/sm_90a" in listed.output.split(), listed.output
    run = cudamatrix("run", *selection, "--no-gpu", out=tmp_path / "out")
    assert run.code == 0, run.output
    cells = run.cells()
    ruled = cells["ruled/nvrtc/11.8/sm_90a"]
    assert ruled["outcome"] == "skip" and "sm_90a first came with CUDA 12.0" in ruled["message"]
    assert cells["ruled/nvrtc/12.4/sm_90a"]["outcome"] == "pass"
    assert (tmp_path / "out" / "cells").is_dir()
    saved = [json.loads(p.read_text())["id"]
             for p in (tmp_path / "out" / "cells").glob("*.json")]
    assert "ruled/nvrtc/11.8/sm_90a" in saved
    report = (tmp_path / "out" / "COMPATIBILITY.md").read_text()
    assert "sm_90a first came with CUDA 12.0" in report
    assert "pass=1" in run.output and "skip=1" in run.output
