"""Issue 48: a stranger's project as its own CMake writes it. llama.cpp's ggml-cuda (the
`llama-cpp-python` 0.3.36 sdist, fetched from PyPI at test time, never copied in): its
`norm.cu` named where it lies through cudamatrix.toml's [paths], its include folders
written from that tree, and ggml's CMake rule `-compress-mode=size` from CUDA 12.8 on as
a [[variant.flags_if]]; compiled on 12.4 (Debian's nvcc) and 13.0 (the nvcc wheel)."""

from __future__ import annotations

from pathlib import Path

from conftest import SHARED_CACHE, cudamatrix
from cudamatrix.config.sources import SourceSpec, fetch

CONFIG = """\
cases = ["cases"]

[paths]
ggml = "{ggml}"
"""
CASE = """\
title = "llama.cpp's RMS norm, as ggml's CMake builds it"

[[variant]]
name = "cmake-flags"
source = "{ggml}/src/ggml-cuda/norm.cu"
frontend = "nvcc"
flags = ["-std=c++17", "-use_fast_math", "-extended-lambda", "-I{ggml}/include",
         "-I{ggml}/src", "-DGGML_CUDA_PEER_MAX_BATCH_SIZE=128"]
  [[variant.flags_if]]
  when = { toolkit = ">=12.8" }
  flags = ["-compress-mode=size"]
"""


def test_llama_cpps_norm_in_its_own_tree_with_its_cmake_flags(tmp_path: Path) -> None:
    sdist = fetch(SourceSpec.parse("sdist:llama-cpp-python==0.3.36", "test"), tmp_path,
                  SHARED_CACHE)
    ggml = sdist.path / "vendor" / "llama.cpp" / "ggml"
    assert (ggml / "src" / "ggml-cuda" / "norm.cu").is_file(), sorted(sdist.path.iterdir())
    project = tmp_path / "project"
    (project / "cases" / "norm").mkdir(parents=True)
    (project / "cudamatrix.toml").write_text(CONFIG.replace("{ggml}", str(ggml)))
    (project / "cases" / "norm" / "case.toml").write_text(CASE)
    checked = cudamatrix("validate", cwd=project)
    assert checked.code == 0, checked.output
    run = cudamatrix("run", "--toolkit", "12.4", "--toolkit", "13.0", "--arch", "sm_80",
                     "--no-gpu", out=tmp_path / "out", cwd=project)
    cells = run.cells()
    assert set(cells) == {"norm/cmake-flags/12.4/sm_80", "norm/cmake-flags/13.0/sm_80"}, \
        run.output
    for cell in cells.values():
        assert cell["outcome"] == "pass", (cell["id"], cell["message"],
                                           cell["stages"][0]["log"][-3000:])
    logs = {c["id"].split("/")[2]: c["stages"][0]["log"].splitlines()[0] for c in cells.values()}
    assert "-compress-mode=size" in logs["13.0"] and "-compress-mode=size" not in logs["12.4"]
    assert f"-I{ggml}/include" in logs["12.4"]
    assert run.results["run"]["paths"] == {"ggml": str(ggml)}
    # A case alone cannot name a tree the project did not declare.
    (project / "cudamatrix.toml").write_text('cases = ["cases"]\n')
    refused = cudamatrix("validate", cwd=project)
    assert refused.code == 2 and "{ggml}" in refused.output and "[paths]" in refused.output, \
        refused.output
