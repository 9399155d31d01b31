"""A toolkit from wheels holds every header of its CUDA release (issue 37).

Written as their authors write them: a dropout kernel on cuRAND's device API and a source
that includes cuBLASLt's header. With the compilers' wheels alone, both failed on every
toolkit (`curand_kernel.h: No such file or directory`, NVRTC's `cannot open source file
"curand_kernel.h"`), a verdict no full install of those releases gives.
"""

from __future__ import annotations

from pathlib import Path

from conftest import write_case

DROPOUT = """#include <curand_kernel.h>
extern "C" __global__ void dropout(float* x, int n, float p, unsigned long long seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  curandStatePhilox4_32_10_t state;
  curand_init(seed, i, 0, &state);
  if (i < n) x[i] = curand_uniform(&state) < p ? 0.0f : x[i] / (1.0f - p);
}
"""
DROPOUT_CASE = """title = "dropout with cuRAND's device API"
[[variant]]
name = "nvrtc"
source = "k.cu"
frontend = "nvrtc"
[[variant]]
name = "nvcc"
source = "k.cu"
frontend = "nvcc"
"""
CUBLASLT = """#include <cublasLt.h>
#include <cublas_v2.h>
#include <cufft.h>
#include <cusparse.h>
#include <nvtx3/nvToolsExt.h>
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
"""
CUBLASLT_CASE = """title = "a source that includes the math libraries' headers"
[[variant]]
name = "nvcc"
source = "k.cu"
frontend = "nvcc"
"""


def test_every_component_header_of_the_release(run_cli, tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    write_case(cases, "dropout", DROPOUT_CASE, {"k.cu": DROPOUT})
    write_case(cases, "mathlibs", CUBLASLT_CASE, {"k.cu": CUBLASLT})
    run = run_cli("run", "--corpus", str(cases), "--case", "dropout", "--case", "mathlibs",
                  "--toolkit", "11.8", "--toolkit", "12.4",
                  "--toolkit", "13.0", "--arch", "sm_80", "--no-gpu", out=tmp_path / "out")
    cells = run.cells()
    assert len(cells) == 9, sorted(cells)
    wrong = {cid: c["message"] for cid, c in cells.items() if c["outcome"] != "pass"}
    assert not wrong, wrong
    assert run.code == 0, run.output[-2000:]
    # Each component at the version NVIDIA's cuda-toolkit metapackage of the release pins.
    toolkits = run.results["run"]["toolkits"]
    assert toolkits["12.4"]["packages"]["nvidia-cublas-cu12 (headers)"] == "12.4.5.8"
    assert toolkits["12.4"]["packages"]["nvidia-curand-cu12 (headers)"] == "10.3.5.147"
    assert toolkits["11.8"]["packages"]["nvidia-curand-cu11 (headers)"] == "10.3.0.86"
    assert toolkits["13.0"]["packages"]["nvidia-cublas (headers)"] == "13.1.1.3"
    # A range pin means the release's own build, not a later one.
    assert toolkits["13.0"]["packages"]["nvidia-nvjitlink (headers)"] == "13.0.88"
    for toolkit in toolkits.values():
        assert not any(name.startswith("cuda-toolkit") for name in toolkit["packages"])


CUBLAS_ENTRY = """#include <cublas_v2.h>
__global__ void touch(float* x) { x[threadIdx.x] += 1.0f; }
extern "C" int check() {
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
  return cublasDestroy(handle) == CUBLAS_STATUS_SUCCESS ? 0 : 2;
}
"""
CUBLAS_CASE = """title = "a library that links cuBLAS"
[[variant]]
name = "nvcc"
source = "k.cu"
frontend = "nvcc"
flags = ["-lcublas"]
kernel = "check"
  [variant.run]
  host = true
"""


def test_a_component_library_a_case_links_is_fetched_for_it(run_cli, tmp_path: Path) -> None:
    """Issue 37: the components' libraries are not part of a toolkit's install (their
    headers are); a case whose flags link one (-lcublas) gets that release's build of it,
    said in the run's progress and the cell's versions. Before, the link step could not
    find -lcublas on any toolkit from wheels."""
    cases = tmp_path / "cases"
    write_case(cases, "linked", CUBLAS_CASE, {"k.cu": CUBLAS_ENTRY})
    run = run_cli("run", "--corpus", str(cases), "--case", "linked", "--toolkit", "12.4",
                  "--toolkit", "13.0", "--arch", "sm_80", "--no-gpu", out=tmp_path / "out")
    cells = run.cells()
    for toolkit, package in (("12.4", "nvidia-cublas-cu12"), ("13.0", "nvidia-cublas")):
        cell = cells[f"linked/nvcc/{toolkit}/sm_80"]
        assert cell["outcome"] == "pass", (toolkit, cell["message"])
        assert f"{package} (libraries)" in cell["versions"], cell["versions"]
        assert "-lcublas" in cell["stages"][0]["log"]
    assert "cublas libraries for -lcublas: nvidia-cublas-cu12 (libraries) 12.4.5.8" \
        in run.output, run.output[-2000:]
