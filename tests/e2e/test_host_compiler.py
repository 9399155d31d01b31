"""nvcc's host compiler, named by a case (issue 12, point 3): nvcc 11.8 refuses GCC 12 with
its own words before compiling a line, takes GCC 11, and takes GCC 12 with
-allow-unsupported-compiler; clang 19 is refused by 11.8 and 12.4 and taken by 13.0. Real
nvcc (Debian's 11.8, the 13.0 wheel), real g++-11/g++-12/clang++-19."""

from __future__ import annotations

from pathlib import Path

from conftest import cudamatrix


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
