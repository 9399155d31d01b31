"""Issue 47: a kernel case's compile is the compile a build does: nvcc and clang compile
the host code too (`nvcc -c`, what CMake and setuptools run). Device images alone passed a
translation unit whose host-only code does not compile: a false green for exactly what a
toolkit upgrade breaks (host headers, the host compiler, `__host__` templates)."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import cudamatrix, write_case

CASE = """\
title = "host code that does not compile"

[[variant]]
name = "nvcc"
source = "k.cu"
frontend = "nvcc"
only = { toolkit = "13.0" }
  [[variant.expect]]
  outcome = "fail"
  stage = "compile"
  match = "undefined"
{clang}
"""
CLANG = """
[[variant]]
name = "clang"
source = "k.cu"
frontend = "clang"
only = { toolkit = "12.8" }
  [[variant.expect]]
  outcome = "fail"
  stage = "compile"
  match = "undeclared identifier"
"""
KERNEL = """\
__global__ void scale(float *x) { x[threadIdx.x] *= 2.0f; }

// Host code only: no device pass sees it.
#ifndef __CUDA_ARCH__
void launch(float *x) { undefined_host_function(x); scale<<<1, 32>>>(x); }
#endif
"""


def test_a_host_only_error_fails_the_compile(tmp_path: Path) -> None:
    clang = shutil.which("clang++-19") is not None
    write_case(tmp_path / "cases", "host-error", CASE.replace("{clang}", CLANG if clang else ""),
               {"k.cu": KERNEL})
    toolkits = ["--toolkit", "13.0", *(["--toolkit", "12.8"] if clang else [])]
    run = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--case", "host-error",
                     "--arch", "sm_80", *toolkits, "--no-gpu", out=tmp_path / "out")
    cells = run.cells()
    assert len(cells) == (2 if clang else 1), run.output
    for cell in cells.values():
        compile_stage = cell["stages"][0]
        assert compile_stage["status"] == "failed", (cell["id"], compile_stage["log"][-2000:])
        assert "undefined_host_function" in compile_stage["log"], cell["id"]
        assert cell["outcome"] == "xfail", (cell["id"], cell["message"])
