"""PyTorch extensions as their projects build them: the torch-extension frontend.

Real parts only: torch's own cpp_extension.py and TorchConfig.cmake of three releases, read
from PyPI's wheels by ranges (a megabyte of a 900 MB wheel, cached as the torch library
axis caches it), and causal-conv1d 1.7.0's csrc/ from its sdist (the tool's `sdist:`
source, checked against the index's sha256), compiled by CUDA 13.0's nvcc and the host
g++ with the flags torch 2.5.1 gives them.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from conftest import REPO, SHARED_CACHE, cudamatrix
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.sources import SourceSpec
from cudamatrix.config.sources import fetch as fetch_source
from cudamatrix.stages.frontends.torch_flags import TorchFlags, read_flags

MATRIX = REPO / "src" / "cudamatrix" / "config" / "data" / "matrix.toml"


def torch_files(version: str) -> Path:
    """torch `version`'s package folder as the library axis extracts it (headers, and the
    files its flags are read from), in the shared cache."""
    from cudamatrix.common.up_to_date import InputLedger
    from cudamatrix.providers.wheels import prepare_header_library

    library = load_matrix(MATRIX).libraries["torch"]
    prepared = prepare_header_library(library, version, SHARED_CACHE, InputLedger())
    return Path(prepared.root) / "torch"


COMMON_NVCC_FLAGS = ("-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                     "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                     "--expt-relaxed-constexpr")
CUDA_LIBRARIES = ("c10", "torch", "torch_cpu", "torch_python", "cudart", "c10_cuda",
                  "torch_cuda")
PYBIND11 = ("COMPILER_TYPE", "STDLIB", "BUILD_ABI")


@pytest.mark.parametrize(("version", "abi", "pybind11"), [
    ("2.5.1", 0, PYBIND11),
    ("2.7.1", 1, PYBIND11),
    ("2.9.1", None, ()),
])
def test_flags_read_from_the_release(version: str, abi: int | None,
                                     pybind11: tuple[str, ...]) -> None:
    """Each release's own flags: 2.5 builds with the old C++ ABI (TorchConfig.cmake says
    0) and passes pybind11's ABI names; 2.7 the new ABI (1) and still the names, its
    py_limited_api branch's define not taken; 2.9 passes neither (the new ABI is the
    compiler's default). All give nvcc the same COMMON_NVCC_FLAGS and -fPIC to the host
    compiler, and link CUDAExtension's CUDA libraries, not its ROCm ones. The unit lane's
    texts (tests/unit/test_torch_flags.py) stand for these three."""
    flags = read_flags(torch_files(version))
    assert isinstance(flags, TorchFlags), flags
    assert flags.nvcc == (*COMMON_NVCC_FLAGS, "--compiler-options", "-fPIC")
    assert flags.std == "c++17"
    assert flags.cxx11_abi == abi
    assert flags.pybind11_names == pybind11
    assert flags.defines == ("-DTORCH_API_INCLUDE_EXTENSION_H",)
    assert flags.names_extension
    assert flags.libraries == CUDA_LIBRARIES
    abi_define = [] if abi is None else [f"-D_GLIBCXX_USE_CXX11_ABI={abi}"]
    assert flags.defines_for("ext") == ["-DTORCH_API_INCLUDE_EXTENSION_H",
                                        "-DTORCH_EXTENSION_NAME=ext", *abi_define]
    assert flags.with_std(["-O3"]) == ["-O3", "-std=c++17"]


def test_abi_define_from_torch_config() -> None:
    """2.7 is the first release whose wheels build with the new C++ ABI: its
    TorchConfig.cmake, not a table here, says 1."""
    flags = read_flags(torch_files("2.7.1"))
    assert isinstance(flags, TorchFlags), flags
    assert flags.cxx11_abi == 1


CAUSAL_CONV1D_CASE = """\
title = "causal-conv1d 1.7.0's update kernel and its binding, as its setup.py builds them"

[[variant]]
name = "update"
frontend = "torch-extension"
source = "csrc/causal_conv1d_update.cu"
# setup.py's extra_compile_args (its CUDA branch), nothing of torch's own.
flags = ["-O3", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
         "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
         "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
         "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math",
         "--ptxas-options=-v", "-lineinfo"]
options = { sources = ["csrc/causal_conv1d.cpp"], extension = "causal_conv1d_cuda", \
cxx_flags = ["-O3"] }
"""


@pytest.mark.slow  # two compiles of torch's headers: about a minute each on two cores
def test_causal_conv1d_compiles_with_torch_flags(tmp_path: Path) -> None:
    """causal-conv1d's update kernel and its pybind11 binding, compiled with torch 2.5.1's
    headers and flags by CUDA 13.0 for sm_90: both objects built, the kernel's SASS for
    sm_90 in its object, no link (the wheel's headers only, said), and the defines read
    from 2.5.1 (its old C++ ABI) on both command lines."""
    spec = SourceSpec.parse("sdist:causal-conv1d==1.7.0", "test_torch_extension.py")
    sdist = fetch_source(spec, tmp_path, SHARED_CACHE).path
    case = tmp_path / "cases" / "causal-conv1d"
    shutil.copytree(sdist / "csrc", case / "csrc")
    (case / "case.toml").write_text(CAUSAL_CONV1D_CASE)
    started = time.monotonic()
    run = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--case", "causal-conv1d",
                     "--toolkit", "13.0", "--arch", "sm_90", "--library", "torch==2.5.1",
                     "--no-gpu", out=tmp_path / "out", cwd=tmp_path)
    seconds = time.monotonic() - started
    assert run.code == 0, run.output[-3000:]
    (cell,) = run.results["cells"]
    stages = {s["stage"]: s for s in cell["stages"]}
    compiled = stages["compile"]
    assert compiled["status"] == "ok", compiled["message"]
    assert "not linked" in compiled["message"]
    commands = [ln for ln in compiled["log"].splitlines() if ln.startswith("$ ")]
    assert len(commands) == 2 and "nvcc" in commands[0] and "g++" in commands[1]
    for command in commands:
        assert "-D_GLIBCXX_USE_CXX11_ABI=0" in command
        assert "-DTORCH_EXTENSION_NAME=causal_conv1d_cuda" in command
        assert "include/python3" in command
    assert "-gencode=arch=compute_90,code=sm_90" in commands[0]
    inspected = stages["inspect"]
    assert inspected["status"] == "ok", inspected["message"]
    modules = inspected["details"]["modules"]
    assert modules and all(m["ships"].startswith("SASS sm_90") for m in modules)
    assert any("causal_conv1d_update_kernel" in r["name"]
               for r in inspected["details"]["resources"])
    print(json.dumps({"seconds": round(seconds, 1)}))
