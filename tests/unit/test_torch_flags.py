"""What CUDAExtension gives the compilers, read from a torch release's own files
(stages/frontends/torch_flags.py), and the commands a torch-extension cell runs with them
(torch_extension.build_plan), without a network or a GPU.

The files are real: the parts of torch 2.5.1's, 2.7.1's and 2.9.1's cpp_extension.py that
the reader walks, and their TorchConfig.cmake's C++ ABI line, as
tests/data/torch-flags/extract.py took them from the wheels (the e2e lane reads the whole
files from PyPI). Each release differs where a mistake would hide: 2.5 builds with the old
C++ ABI and passes pybind11's ABI names, 2.7 with the new ABI and still the names (and a
py_limited_api branch that adds another define), 2.9 neither."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from cudamatrix.errors import Failure
from cudamatrix.stages.cell.environment import Environment, LibraryEnvironment
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.frontends.torch_extension import build_plan, python_include
from cudamatrix.stages.frontends.torch_flags import (
    CPP_EXTENSION,
    TORCH_CONFIG,
    TorchFlags,
    parse_flags,
    read_flags,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "torch-flags"
RELEASES = ("2.5.1", "2.7.1", "2.9.1")
COMMON = ("-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
          "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
          "--expt-relaxed-constexpr")
CUDA_LIBRARIES = ("c10", "torch", "torch_cpu", "torch_python", "cudart", "c10_cuda",
                  "torch_cuda")


def torch_package(root: Path, version: str) -> Path:
    """A torch package folder (``.../torch``) holding the release's files the flags are read
    from, as the library axis extracts them from its wheel."""
    package = root / f"torch-{version}" / "torch"
    (package / CPP_EXTENSION).parent.mkdir(parents=True)
    shutil.copy(DATA / f"torch-{version}.cpp_extension.py.txt", package / CPP_EXTENSION)
    (package / TORCH_CONFIG).parent.mkdir(parents=True)
    shutil.copy(DATA / f"torch-{version}.TorchConfig.cmake", package / TORCH_CONFIG)
    return package


def flags_of(tmp_path: Path, version: str) -> TorchFlags:
    flags = read_flags(torch_package(tmp_path, version))
    assert isinstance(flags, TorchFlags), flags
    return flags


@pytest.mark.parametrize(("version", "abi", "pybind11"), [
    ("2.5.1", 0, ("COMPILER_TYPE", "STDLIB", "BUILD_ABI")),
    ("2.7.1", 1, ("COMPILER_TYPE", "STDLIB", "BUILD_ABI")),
    ("2.9.1", None, ()),
])
def test_each_release_gives_its_own_flags(tmp_path: Path, version: str, abi: int | None,
                                          pybind11: tuple[str, ...]) -> None:
    flags = flags_of(tmp_path, version)
    # COMMON_NVCC_FLAGS, then unix_cuda_flags' -fPIC with the shell's quotes taken off.
    assert flags.nvcc == (*COMMON, "--compiler-options", "-fPIC")
    assert flags.std == "c++17"
    assert flags.cxx11_abi == abi  # TorchConfig.cmake's value, never a table's
    assert flags.pybind11_names == pybind11
    # The constant defines only: py_limited_api's -DPy_LIMITED_API (2.7 on) is another
    # kind of build's.
    assert flags.defines == ("-DTORCH_API_INCLUDE_EXTENSION_H",)
    assert flags.names_extension
    assert flags.libraries == CUDA_LIBRARIES  # the CUDA branch's, not ROCm's amdhip64


def test_the_defines_an_extension_is_compiled_with(tmp_path: Path) -> None:
    old = flags_of(tmp_path, "2.5.1")
    assert old.defines_for("scale") == ["-DTORCH_API_INCLUDE_EXTENSION_H",
                                        "-DTORCH_EXTENSION_NAME=scale",
                                        "-D_GLIBCXX_USE_CXX11_ABI=0"]
    # A compiled torch's pybind11 values, where it imports; a wheel's headers give none.
    assert old.defines_for("scale", {"COMPILER_TYPE": "_gcc", "STDLIB": "_libstdcpp"}) == [
        "-DTORCH_API_INCLUDE_EXTENSION_H", '-DPYBIND11_COMPILER_TYPE="_gcc"',
        '-DPYBIND11_STDLIB="_libstdcpp"', "-DTORCH_EXTENSION_NAME=scale",
        "-D_GLIBCXX_USE_CXX11_ABI=0"]
    assert flags_of(tmp_path, "2.9.1").defines_for("scale") == [
        "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=scale"]


def test_the_standard_is_added_only_where_the_flags_name_none(tmp_path: Path) -> None:
    flags = flags_of(tmp_path, "2.9.1")
    assert flags.with_std(["-O3"]) == ["-O3", "-std=c++17"]
    assert flags.with_std(["-O3", "-std=c++20"]) == ["-O3", "-std=c++20"]


def test_a_release_that_adds_the_abi_define_and_names_no_value_is_refused() -> None:
    text = (DATA / "torch-2.5.1.cpp_extension.py.txt").read_text()
    said = parse_flags(text, "# no TORCH_CXX_FLAGS\n")
    assert isinstance(said, Failure) and "TorchConfig.cmake names no value" in said.reason
    assert isinstance(parse_flags(text, None), Failure)
    assert isinstance(parse_flags("x = (", None), Failure)
    assert isinstance(parse_flags("import os\n", None), Failure)  # no COMMON_NVCC_FLAGS


# --- the commands a cell runs: torch_extension.build_plan ---------------------------------

def _job(tmp_path: Path, version: str, flags: list[str] | None = None,
         **options: object) -> Job:
    package = torch_package(tmp_path, version)
    case = tmp_path / "case"
    case.mkdir(exist_ok=True)
    work = tmp_path / "cell"
    work.mkdir(exist_ok=True)
    toolkit = Environment(toolkit="13.0", provider="local", root="/usr/local/cuda-13.0",
                          nvcc="/usr/local/cuda-13.0/bin/nvcc",
                          include_dirs=("/usr/local/cuda-13.0/include",),
                          library_dirs=("/usr/local/cuda-13.0/lib64",), host_compiler="g++")
    library = LibraryEnvironment("torch", version, str(package.parent),
                                 include_dirs=(str(package / "include"),))
    return Job(cell_id="scale/ext/13.0/sm_90", arch="sm_90", source=str(case / "scale.cu"),
               frontend="torch-extension", workdir=str(work), timeout=60,
               flags=tuple(flags or ("-O3",)), env=toolkit, library=library,
               options={"sources": ["binding.cpp"], "extension": "scale_ext",
                        "cxx_flags": ["-Wextra"], **options}, case_dir=str(case))


@pytest.mark.parametrize(("version", "abi"), [("2.5.1", "0"), ("2.7.1", "1"), ("2.9.1", None)])
def test_both_compilers_get_the_releases_flags_and_pythons_headers(
        tmp_path: Path, version: str, abi: str | None) -> None:
    job = _job(tmp_path, version)
    plan = build_plan(job, flags_of(tmp_path / "read", version))
    (cu, nvcc), (cpp, host) = plan.compiles
    assert cu.endswith("scale.cu") and cpp.endswith("binding.cpp")
    assert nvcc[:3] == ["/usr/local/cuda-13.0/bin/nvcc", "-ccbin", "g++"]
    assert host[0] == "g++"
    python = f"-I{python_include()}"
    for command in (nvcc, host):
        assert python in command  # the interpreter's own Python.h, as setuptools passes it
        assert f"-I{tmp_path}/torch-{version}/torch/include" in command
        assert "-DTORCH_API_INCLUDE_EXTENSION_H" in command
        assert "-DTORCH_EXTENSION_NAME=scale_ext" in command
        assert command[-1] == "-std=c++17"
        abi_defines = [f for f in command if f.startswith("-D_GLIBCXX_USE_CXX11_ABI=")]
        assert abi_defines == ([f"-D_GLIBCXX_USE_CXX11_ABI={abi}"] if abi else [])
    # nvcc: torch's flags, then the case's, then the cell's arch, then the defines.
    after = nvcc[nvcc.index("-o") + 2:]
    assert after[:len(COMMON) + 4] == [*COMMON, "--compiler-options", "-fPIC", "-O3",
                                       "-gencode=arch=compute_90,code=sm_90"]
    # The host compiler: the interpreter's C flags, then the case's own and torch's defines
    # (not nvcc's flags).
    own = host[host.index("-o") + 2:]
    assert own[0] == "-Wextra" and "-O3" not in own and "--expt-relaxed-constexpr" not in own
    # A wheel's headers hold no libraries: built to objects, not linked, said.
    assert plan.link is None and "not linked" in plan.note
    assert plan.facts["cxx11_abi"] == (int(abi) if abi else None)


def test_a_case_that_names_its_own_arch_gets_no_other(tmp_path: Path) -> None:
    job = _job(tmp_path, "2.9.1", ["-gencode", "arch=compute_80,code=sm_80"])
    (_, nvcc), _ = build_plan(job, flags_of(tmp_path / "read", "2.9.1")).compiles
    assert not any(f.startswith("-gencode=") for f in nvcc)
    assert nvcc.count("-gencode") == 1


def test_a_torch_with_its_libraries_is_linked_against_them(tmp_path: Path) -> None:
    job = _job(tmp_path, "2.9.1")
    lib = tmp_path / "torch-2.9.1" / "torch" / "lib"
    lib.mkdir()
    (lib / "libtorch.so").write_bytes(b"")
    plan = build_plan(job, flags_of(tmp_path / "read", "2.9.1"))
    assert plan.link is not None and plan.note == ""
    assert plan.link[:2] == ["g++", "-shared"]
    assert [f for f in plan.link if f.startswith("-l")] == [f"-l{n}" for n in CUDA_LIBRARIES]
    assert f"-L{lib}" in plan.link
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    assert plan.link[-1] == str(tmp_path / "cell" / "objects" / f"scale_ext{suffix}")
    assert [str(o) for o in plan.objects] == plan.link[2:4]
