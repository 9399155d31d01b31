"""nvcc's host compiler, named by a case (issue 12, point 3): nvcc 11.8 refuses GCC 12 with
its own words before compiling a line, takes GCC 11, and takes GCC 12 with
-allow-unsupported-compiler; clang 19 is refused by 11.8 and 12.4 and taken by 13.0. Real
nvcc (Debian's 11.8, the 13.0 wheel), real g++-11/g++-12/clang++-19."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import cudamatrix, write_case

# The compilers these tests drive: `nox -s tests` installs them as root (TEST_PROGRAMS);
# a machine without one skips saying which, rather than failing on a missing program.
MISSING = [p for p in ("g++-11", "g++-12", "clang++-19") if shutil.which(p) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"no {', '.join(MISSING)} on this "
                                "machine (apt-get install g++-11 g++-12 clang-19)")


def test_the_host_compiler_a_case_names_is_the_one_nvcc_gets(tmp_path: Path) -> None:
    args = ("run", "--case", "host-compiler-range", "--toolkit", "11.8", "--toolkit", "13.0",
            "--arch", "sm_80")
    run = cudamatrix(*args, out=tmp_path / "out")
    assert run.code == 0, run.output[-3000:]
    cells = run.cells()
    refused = cells["host-compiler-range/gcc-12/11.8/sm_80"]
    assert refused["outcome"] == "xfail", refused["message"]
    assert "unsupported GNU version! gcc versions later than 11" in refused["message"]
    assert refused["versions"]["host_compiler"].startswith("g++-12 12.")
    assert "-ccbin" in refused["stages"][0]["log"]
    assert cells["host-compiler-range/gcc-11/11.8/sm_80"]["outcome"] == "pass"
    assert cells["host-compiler-range/gcc-12-allowed/11.8/sm_80"]["outcome"] == "pass"
    assert cells["host-compiler-range/clang-19/11.8/sm_80"]["outcome"] == "xfail"
    assert cells["host-compiler-range/clang-19/13.0/sm_80"]["outcome"] == "pass"
    # Same source and flags, another host compiler: never the other's cached compile.
    again = cudamatrix(*args, out=tmp_path / "again")
    for cell_id, cell in again.cells().items():
        assert cell["outcome"] == cells[cell_id]["outcome"], cell_id
        assert cell["stages"][0]["details"].get("cache") == "hit", cell_id


AXIS_CASE = """
    title = "one kernel under every host compiler"
    [[variant]]
    name = "nvcc"
    source = "k.cu"
    frontend = "nvcc"
    kernel = "axpy"
      [[variant.expect]]
      when = { toolkit = "<12.0", host_compiler = ["g++-12", "clang++-19"] }
      outcome = "fail"
      stage = "compile"
      match = "unsupported (GNU|clang) version"
      [[variant.expect]]
      when = { toolkit = "<13.0", host_compiler = "clang++-19" }
      outcome = "fail"
      stage = "compile"
      match = "unsupported clang version"
    [[variant]]
    name = "nvrtc"
    source = "k.cu"
    frontend = "nvrtc"
    kernel = "axpy"
"""
AXPY = """extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


def test_the_host_compiler_is_an_axis_of_the_matrix(tmp_path: Path) -> None:
    """--host-compiler (or a tier's host_compiler list) runs each nvcc cell once per
    compiler; NVRTC cells, which run none, once; `when` selects by compiler."""
    write_case(tmp_path / "corpus", "axpy", AXIS_CASE, {"k.cu": AXPY})
    run = cudamatrix("run", "--corpus", str(tmp_path / "corpus"), "--case", "axpy",
                     "--toolkit", "11.8", "--toolkit", "12.4", "--toolkit", "13.0",
                     "--arch", "sm_80", "--host-compiler", "g++-11", "--host-compiler", "g++-12",
                     "--host-compiler", "clang++-19", out=tmp_path / "out")
    assert run.code == 0, run.output[-3000:]
    cells = run.cells()
    assert len(cells) == 9 + 3  # nvcc: 3 toolkits x 3 compilers; NVRTC: 3 toolkits
    outcomes = {i: c["outcome"] for i, c in cells.items() if "/nvcc/" in i}
    assert outcomes == {
        "axpy/nvcc/11.8/sm_80/g++-11": "pass", "axpy/nvcc/11.8/sm_80/g++-12": "xfail",
        "axpy/nvcc/11.8/sm_80/clang++-19": "xfail", "axpy/nvcc/12.4/sm_80/g++-11": "pass",
        "axpy/nvcc/12.4/sm_80/g++-12": "pass", "axpy/nvcc/12.4/sm_80/clang++-19": "xfail",
        "axpy/nvcc/13.0/sm_80/g++-11": "pass", "axpy/nvcc/13.0/sm_80/g++-12": "pass",
        "axpy/nvcc/13.0/sm_80/clang++-19": "pass"}
    assert "clang version must be less than 18" in cells["axpy/nvcc/12.4/sm_80/clang++-19"][
        "message"]
    assert cells["axpy/nvcc/13.0/sm_80/g++-11"]["host_compiler"] == "g++-11"
    assert cells["axpy/nvcc/13.0/sm_80/g++-11"]["versions"]["host_compiler"].startswith(
        "g++-11 11.")
    glance = (tmp_path / "out" / "COMPATIBILITY.md").read_text()
    # The grid's rows set the host compilers apart; the sentence names each of them.
    assert "|`axpy` nvcc · clang++-19|" in glance and "12.4 · clang++-19" in glance
