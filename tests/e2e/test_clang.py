"""clang as a CUDA compiler against the wheel toolkits (issue 12, point 4): device code
built on 12.x releases where NVIDIA ships no nvcc wheel, and clang's own limits (its
supported CUDA versions, what CUDA 13 removed) are verdicts like any other."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import cudamatrix, write_case

KERNEL = """extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
CASE = """
    title = "saxpy built by clang"
    [[variant]]
    name = "v"
    source = "k.cu"
    frontend = "clang"
    kernel = "saxpy"
      [[variant.artifact]]
      in = "sass"
      contains = "FFMA"
      [[variant.expect]]
      when = { toolkit = ">=13.0" }
      note = "clang 19's CUDA wrapper includes texture_fetch_functions.h, which CUDA 13 removed"
      outcome = "fail"
      stage = "compile"
      match = "texture_fetch_functions.h"
      [[variant.expect]]
      when = { toolkit = ">=12.0" }
      outcome = "pass"
      warning = "CUDA version .*(partially supported|newer than)"
"""


@pytest.mark.skipif(shutil.which("clang++-19") is None,
                    reason="needs Debian's clang-19 (.ci/run installs it)")
def test_clang_builds_device_code_on_the_wheel_toolkits(tmp_path: Path) -> None:
    write_case(tmp_path / "c", "saxpy-clang", CASE, {"k.cu": KERNEL})
    args = ["run", "--corpus", str(tmp_path / "c"), "--case", "saxpy-clang", "--arch", "sm_80"]
    for toolkit in ("11.8", "12.4", "12.8", "13.0"):
        args += ["--toolkit", toolkit]
    run = cudamatrix(*args, out=tmp_path / "out")
    assert run.code == 0, run.output[-3000:]
    cells = run.cells()
    outcomes = {c["toolkit"]: c["outcome"] for c in cells.values()}
    assert outcomes == {"11.8": "pass", "12.4": "pass", "12.8": "pass", "13.0": "xfail"}
    built = cells["saxpy-clang/v/12.8/sm_80"]
    assert built["stages"][0]["details"]["clang"].startswith("19.")
    assert run.results["run"]["toolkits"]["12.8"]["tool_versions"]["clang"].startswith("19.")
    ships = {i["kind"]: i for i in built["stages"][0]["details"]["ships"]}
    assert ships["sass"]["arch"] == "sm_80" and ships["ptx"]["ptx_isa"]
