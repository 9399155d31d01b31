"""Issue 71, point 1: a compile that fails because a function its own header declares only
for newer archs is undefined for the cell's arch names the arch it works from and the
header's guard, measured by the real nvcc 13.0 preprocessing the same unit for the newer
archs it knows (stages/compile/arch_guard.py), not read off a table. A guard that hides
the declaration from the host pass too (which compiles a kernel's body) works on no arch,
and is said so: nvcc 13.0 refuses that kernel for sm_80 and sm_86 as well (checked). NVRTC,
which has no preprocessor to ask, compiles the program again for the newer archs."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cudamatrix, write_case

CUDA_13 = Path("/usr/local/cuda-13.0")
VARIANT = """
[[variant]]
name = "{name}"
source = "{source}"
frontend = "{frontend}"
flags = ["-std=c++17", "-DSCALE=2"]
  [[variant.expect]]
  outcome = "fail"
  stage = "compile"
  match = "dequant"
"""
CASE = ('title = "a function its header declares only from sm_80 on"\n'
        + VARIANT.format(name="guarded", source="k.cu", frontend="nvcc")
        + VARIANT.format(name="device-only", source="device_only.cu", frontend="nvcc")
        + VARIANT.format(name="nvrtc", source="k.cu", frontend="nvrtc"))
HEADER = """\
#pragma once
// As Marlin's template and CUDA's own sm_80_rt.h: the fast path where the tensor cores are.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ inline int dequant(int q) { return q * SCALE; }
#endif
"""
DEVICE_ONLY_HEADER = HEADER.replace("!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800",
                                    "defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800")
KERNEL = """\
#include "{header}"
__global__ void unpack(int *x) {{ x[threadIdx.x] = dequant(x[threadIdx.x]); }}
"""


@pytest.mark.skipif(not (CUDA_13 / "bin" / "nvcc").is_file(), reason="needs CUDA 13.0 installed")
def test_an_arch_guarded_function_names_the_arch_it_works_from(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", "guarded", CASE, {
        "k.cu": KERNEL.format(header="dequant.h"), "dequant.h": HEADER,
        "device_only.cu": KERNEL.format(header="device_only.h"),
        "device_only.h": DEVICE_ONLY_HEADER})
    run = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--case", "guarded",
                     "--variant", "guarded", "--variant", "device-only", "--toolkit", "13.0",
                     "--arch", "sm_75", "--provider", "host", "--no-gpu",
                     "--no-compile-cache", out=tmp_path / "out",
                     env={"CUDA_HOME": str(CUDA_13)})
    cells = {c["variant"]: c for c in run.cells().values()}
    assert sorted(cells) == ["device-only", "guarded"], run.output
    for cell in cells.values():
        # The verdict is the case's, as before: the failure it expects.
        assert (cell["outcome"], cell["stage"]) == ("xfail", "compile"), run.output

    found = cells["guarded"]["stages"][0]["details"]["since_arch"]
    assert found["name"] == "dequant" and found["arch"] == "sm_80", found
    assert Path(found["file"]).name == "dequant.h" and found["line"] == 4, found
    assert found["guard"] == "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800", found
    assert found["guard_line"] == 3
    # The cell's arch, the newest the toolkit knows, then sm_80 (the first: stopped
    # there), then the host pass's own preprocessing, which sees the declaration.
    assert found["checked"] == ["sm_75", "sm_121", "sm_80", "host"], found
    diagnosis = cells["guarded"]["diagnosis"]
    assert diagnosis["rule"] == "declared-from-newer-arch", diagnosis
    assert diagnosis["title"] == ("dequant works from sm_80 on: dequant.h:4 declares it only "
                                  "for sm_80 and newer"), diagnosis
    assert "#if __CUDA_ARCH__ >= 800" in diagnosis["fix"]

    hidden = cells["device-only"]["stages"][0]["details"]["since_arch"]
    assert (hidden["arch"], hidden["device_only"]) == ("", "sm_80"), hidden
    diagnosis = cells["device-only"]["diagnosis"]
    assert diagnosis["rule"] == "declared-for-device-code-only", diagnosis
    assert "!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800" in diagnosis["fix"]



def test_nvrtc_names_the_arch_it_compiles_the_name_for(tmp_path: Path) -> None:
    """NVRTC has no preprocessor to ask: the same program (13.0's NVRTC, from its wheels)
    compiled for sm_121, then sm_80, names the arch, not the header line."""
    write_case(tmp_path / "cases", "guarded", CASE, {
        "k.cu": KERNEL.format(header="dequant.h"), "dequant.h": HEADER,
        "device_only.cu": KERNEL.format(header="device_only.h"),
        "device_only.h": DEVICE_ONLY_HEADER})
    run = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--case", "guarded",
                     "--variant", "nvrtc", "--toolkit", "13.0", "--arch", "sm_75", "--no-gpu",
                     "--no-compile-cache", out=tmp_path / "out")
    cell = next(iter(run.cells().values()))
    assert (cell["outcome"], cell["stage"]) == ("xfail", "compile"), run.output
    compiled = cell["stages"][0]["details"]["since_arch"]
    assert (compiled["arch"], compiled["checked"]) == ("sm_80", ["sm_75", "sm_121", "sm_80"])
    assert compiled["compiled_by"].startswith("NVRTC 13.0")
    diagnosis = cell["diagnosis"]
    assert diagnosis["rule"] == "compiles-from-newer-arch", diagnosis
    assert diagnosis["title"].startswith("dequant works from sm_80 on: NVRTC 13.0")
