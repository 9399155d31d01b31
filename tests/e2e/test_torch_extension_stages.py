"""A torch-extension cell's stages as the run records them, quick: a kernel and a binding
that include none of torch's headers (seconds to build, where torch's own take a minute
a file), compiled by CUDA 13.0's nvcc and the host g++ with the flags and defines torch
2.5.1's wheel gives them, then audited; no GPU here, so the load is skipped, saying why.

The stage list was verified on an H100 (bench/evidence/torch-ext/h100: compile, inspect,
load, run); tests/unit/test_torch_extension_steps.py holds the steps the pipeline runs.
"""

from __future__ import annotations

from pathlib import Path

from conftest import cudamatrix

KERNEL = """\
__global__ void scale_kernel(const float* x, float* out, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] * factor;
}
"""
BINDING = "int scale_ext_version() { return 1; }\n"
CASE = """\
title = "a torch extension that includes none of torch's headers"

[[variant]]
name = "scale"
frontend = "torch-extension"
source = "scale.cu"
options = { sources = ["binding.cpp"], extension = "scale_ext" }
"""
# What each stage's details held on the H100 (the load's and the run's: the GPU's run).
COMPILE_FACTS = {"torch", "extension", "python_include", "torch_nvcc_flags", "torch_defines",
                 "cxx11_abi", "libraries", "warnings", "outputs", "compiler_cpu_s"}
INSPECT_FACTS = {"modules", "resources"}


def test_its_stages_are_compile_inspect_and_a_skipped_load(tmp_path: Path) -> None:
    case = tmp_path / "cases" / "scale"
    case.mkdir(parents=True)
    (case / "case.toml").write_text(CASE)
    (case / "scale.cu").write_text(KERNEL)
    (case / "binding.cpp").write_text(BINDING)
    run = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--case", "scale",
                     "--toolkit", "13.0", "--arch", "sm_90", "--library", "torch==2.5.1",
                     "--no-gpu", out=tmp_path / "out", cwd=tmp_path)
    assert run.code == 0, run.output[-3000:]
    (cell,) = run.results["cells"]
    stages = cell["stages"]
    assert [(s["stage"], s["status"]) for s in stages] == [
        ("compile", "ok"), ("inspect", "ok"), ("load", "skipped")], stages
    compiled, inspected, _ = stages
    assert "not linked" in compiled["message"]  # a wheel's headers: objects, no library
    assert set(compiled["details"]) >= COMPILE_FACTS, sorted(compiled["details"])
    assert [Path(o).name for o in compiled["details"]["outputs"]] == ["0-scale.o",
                                                                      "1-binding.o"]
    assert set(inspected["details"]) >= INSPECT_FACTS, sorted(inspected["details"])
    assert all(m["ships"].startswith("SASS sm_90") for m in inspected["details"]["modules"])
    assert (cell["outcome"], cell["stage"]) == ("pass", "inspect")  # as before: 1939b44
