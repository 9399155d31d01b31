"""What CUDAExtension gives the compilers, read from a torch release's own files
(stages/frontends/torch_flags.py), and the commands a torch-extension cell runs with them
(torch_extension.build_plan), without a network or a GPU.

The inputs are small texts written here in the shape the reader walks (a module-level
`COMMON_NVCC_FLAGS` list, a `BuildExtension` class whose methods add flags with
`_add_compile_flag`, a `CUDAExtension` function with a CUDA and a ROCm branch, a
TorchConfig.cmake line), one per behaviour a release has shown: an old-ABI release that
passes pybind11's ABI names, a new-ABI one that still passes them beside a py_limited_api
branch adding a define of its own, and one that passes no ABI define and no pybind11
names. The real releases (2.5.1, 2.7.1, 2.9.1, read from PyPI's wheels) are checked the
same way in tests/e2e/test_torch_extension.py."""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
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

COMMON = ("-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
          "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
          "--expt-relaxed-constexpr")
CUDA_LIBRARIES = ("c10", "torch", "torch_cpu", "torch_python", "cudart", "c10_cuda",
                  "torch_cuda")
PYBIND11 = ("COMPILER_TYPE", "STDLIB", "BUILD_ABI")

# The pieces of a cpp_extension.py: each is what one behaviour adds inside
# BuildExtension.build_extensions' loop over the extensions.
_PYBIND11_LOOP = f"""\
for name in {list(PYBIND11)!r}:
    value = getattr(torch._C, f"_PYBIND11_{{name}}")
    if value is not None:
        self._add_compile_flag(extension, f'-DPYBIND11_{{name}}="{{value}}"')
"""
# A constant define under py_limited_api: read as a constant, it would land in every
# extension's defines unless the branch is skipped.
_LIMITED_API = ("if extension.py_limited_api:\n"
                '    self._add_compile_flag(extension, "-DPy_LIMITED_API=0x03090000")\n')


def _indented(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line if line.strip() else line
                   for line in text.splitlines(keepends=True))


def cpp_extension(*, pybind11: bool, limited_api: bool, abi_define: bool) -> str:
    """A cpp_extension.py of one behaviour, in the shape a release has it: a ROCm branch
    in build_extensions (its define is HIP's alone), the pybind11 names' loop (in the
    else of a py_limited_api branch where there is one), the extension's name added
    through a `define` variable, the ABI define built from the compiled torch's value
    in a method of its own, and CUDAExtension's libraries with torch_python under
    py_limited_api's test where that branch exists."""
    if limited_api:
        per_extension = _LIMITED_API + ("else:\n" + _indented(_PYBIND11_LOOP, 4)
                                        if pybind11 else "")
    else:
        per_extension = _PYBIND11_LOOP if pybind11 else ""
    per_extension += "self._define_torch_extension_name(extension)\n"
    abi_method = ""
    if abi_define:  # the method and its call, or neither (a release without has neither)
        per_extension += "self._add_gnu_cpp_abi_flag(extension)\n"
        abi_method = ("\n    def _add_gnu_cpp_abi_flag(self, extension):\n"
                      "        value = str(int(torch._C._GLIBCXX_USE_CXX11_ABI))\n"
                      "        self._add_compile_flag(\n"
                      '            extension, "-D_GLIBCXX_USE_CXX11_ABI=" + value)\n')
    python_library = ("if not kwargs.get('py_limited_api', False):\n"
                      "    libraries.append('torch_python')\n" if limited_api
                      else "libraries.append('torch_python')\n")
    cuda, rocm = ("cudart", "c10_cuda", "torch_cuda"), ("amdhip64", "c10_hip", "torch_hip")
    branch = "".join(f"        libraries.append({n!r})\n" for n in rocm)
    other = "".join(f"        libraries.append({n!r})\n" for n in cuda)
    return f"""\
# A cpp_extension.py written for these tests, in the shape torch's releases have.
import torch

COMMON_NVCC_FLAGS = {list(COMMON)!r}


class BuildExtension:
    def build_extensions(self):
        for extension in self.extensions:
            self._add_compile_flag(extension, "-DTORCH_API_INCLUDE_EXTENSION_H")
            if IS_HIP_EXTENSION:
                self._add_compile_flag(extension, "-D__HIP_PLATFORM_AMD__=1")
{_indented(per_extension, 12)}
        def append_std17_if_no_std_present(cflags):
            standard = "-std=" + "c++17"
            if not any(flag.startswith("-std=") for flag in cflags):
                cflags.append(standard)

        def unix_cuda_flags(cflags):
            return COMMON_NVCC_FLAGS + ["--compiler-options", "'-fPIC'"] + cflags

    def _define_torch_extension_name(self, extension):
        name = extension.name.rpartition(".")[2]
        define = f"-DTORCH_EXTENSION_NAME={{name}}"
        self._add_compile_flag(extension, define)
{abi_method}

def CUDAExtension(name, sources, *args, **kwargs):
    libraries = kwargs.get("libraries", [])
    libraries.append('c10')
    libraries.append('torch')
    libraries.append('torch_cpu')
{_indented(python_library, 4)}    if IS_HIP_EXTENSION:
{branch}    else:
{other}    kwargs["libraries"] = libraries
    return kwargs
"""


def torch_config(abi: int | None) -> str:
    """A TorchConfig.cmake's C++ ABI lines: the flag a CMake build gets, or none."""
    if abi is None:
        return "# This release's CMake config names no C++ ABI define.\n"
    return ("if(NOT TORCH_CXX_FLAGS)\n"
            f'  set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI={abi}")\n'
            "endif()\n")


@dataclass(frozen=True)
class Release:
    """One behaviour a torch release has shown, as its two files say it."""

    cpp_extension: str
    torch_config: str


RELEASES = {
    # Built with the old C++ ABI; passes pybind11's ABI names; no py_limited_api.
    "old-abi": Release(cpp_extension(pybind11=True, limited_api=False, abi_define=True),
                       torch_config(0)),
    # Built with the new C++ ABI; still the names, now beside a py_limited_api branch.
    "new-abi": Release(cpp_extension(pybind11=True, limited_api=True, abi_define=True),
                       torch_config(1)),
    # No ABI define (the compiler's default is the new ABI) and no pybind11 names; the
    # py_limited_api branch stays.
    "no-abi-define": Release(cpp_extension(pybind11=False, limited_api=True,
                                           abi_define=False), torch_config(None)),
}


def torch_package(root: Path, release: str) -> Path:
    """A torch package folder (``.../torch``) holding the release's files the flags are read
    from, where the library axis extracts them from its wheel."""
    package = root / f"torch-{release}" / "torch"
    (package / CPP_EXTENSION).parent.mkdir(parents=True)
    (package / CPP_EXTENSION).write_text(RELEASES[release].cpp_extension)
    (package / TORCH_CONFIG).parent.mkdir(parents=True)
    (package / TORCH_CONFIG).write_text(RELEASES[release].torch_config)
    return package


def flags_of(tmp_path: Path, release: str) -> TorchFlags:
    flags = read_flags(torch_package(tmp_path, release))
    assert isinstance(flags, TorchFlags), flags
    return flags


@pytest.mark.parametrize(("release", "abi", "pybind11"), [
    ("old-abi", 0, PYBIND11),
    ("new-abi", 1, PYBIND11),
    ("no-abi-define", None, ()),
])
def test_each_release_gives_its_own_flags(tmp_path: Path, release: str, abi: int | None,
                                          pybind11: tuple[str, ...]) -> None:
    flags = flags_of(tmp_path, release)
    # COMMON_NVCC_FLAGS, then unix_cuda_flags' -fPIC with the shell's quotes taken off.
    assert flags.nvcc == (*COMMON, "--compiler-options", "-fPIC")
    assert flags.std == "c++17"
    assert flags.cxx11_abi == abi  # TorchConfig.cmake's value, never a table's
    assert flags.pybind11_names == pybind11
    # The constant defines only: py_limited_api's -DPy_LIMITED_API and the ROCm branch's
    # define are other kinds of build's.
    assert flags.defines == ("-DTORCH_API_INCLUDE_EXTENSION_H",)
    assert flags.names_extension
    assert flags.libraries == CUDA_LIBRARIES  # the CUDA branch's, not ROCm's amdhip64


def test_the_defines_an_extension_is_compiled_with(tmp_path: Path) -> None:
    old = flags_of(tmp_path, "old-abi")
    assert old.defines_for("scale") == ["-DTORCH_API_INCLUDE_EXTENSION_H",
                                        "-DTORCH_EXTENSION_NAME=scale",
                                        "-D_GLIBCXX_USE_CXX11_ABI=0"]
    # A compiled torch's pybind11 values, where it imports; a wheel's headers give none.
    assert old.defines_for("scale", {"COMPILER_TYPE": "_gcc", "STDLIB": "_libstdcpp"}) == [
        "-DTORCH_API_INCLUDE_EXTENSION_H", '-DPYBIND11_COMPILER_TYPE="_gcc"',
        '-DPYBIND11_STDLIB="_libstdcpp"', "-DTORCH_EXTENSION_NAME=scale",
        "-D_GLIBCXX_USE_CXX11_ABI=0"]
    assert flags_of(tmp_path, "no-abi-define").defines_for("scale") == [
        "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=scale"]


def test_the_standard_is_added_only_where_the_flags_name_none(tmp_path: Path) -> None:
    flags = flags_of(tmp_path, "no-abi-define")
    assert flags.with_std(["-O3"]) == ["-O3", "-std=c++17"]
    assert flags.with_std(["-O3", "-std=c++20"]) == ["-O3", "-std=c++20"]


def test_a_release_that_adds_the_abi_define_and_names_no_value_is_refused() -> None:
    text = RELEASES["old-abi"].cpp_extension
    said = parse_flags(text, "# no TORCH_CXX_FLAGS\n")
    assert isinstance(said, Failure) and "TorchConfig.cmake names no value" in said.reason
    assert isinstance(parse_flags(text, None), Failure)
    assert isinstance(parse_flags("x = (", None), Failure)
    assert isinstance(parse_flags("import os\n", None), Failure)  # no COMMON_NVCC_FLAGS


# --- the commands a cell runs: torch_extension.build_plan ---------------------------------

def _job(tmp_path: Path, release: str, flags: list[str] | None = None,
         **options: object) -> Job:
    package = torch_package(tmp_path, release)
    case = tmp_path / "case"
    case.mkdir(exist_ok=True)
    work = tmp_path / "cell"
    work.mkdir(exist_ok=True)
    toolkit = Environment(toolkit="13.0", provider="local", root="/usr/local/cuda-13.0",
                          nvcc="/usr/local/cuda-13.0/bin/nvcc",
                          include_dirs=("/usr/local/cuda-13.0/include",),
                          library_dirs=("/usr/local/cuda-13.0/lib64",), host_compiler="g++")
    library = LibraryEnvironment("torch", release, str(package.parent),
                                 include_dirs=(str(package / "include"),))
    return Job(cell_id="scale/ext/13.0/sm_90", arch="sm_90", source=str(case / "scale.cu"),
               frontend="torch-extension", workdir=str(work), timeout=60,
               flags=tuple(flags or ("-O3",)), env=toolkit, library=library,
               options={"sources": ["binding.cpp"], "extension": "scale_ext",
                        "cxx_flags": ["-Wextra"], **options}, case_dir=str(case))


@pytest.mark.parametrize(("release", "abi"), [("old-abi", "0"), ("new-abi", "1"),
                                              ("no-abi-define", None)])
def test_both_compilers_get_the_releases_flags_and_pythons_headers(
        tmp_path: Path, release: str, abi: str | None) -> None:
    job = _job(tmp_path, release)
    plan = build_plan(job, flags_of(tmp_path / "read", release))
    (cu, nvcc), (cpp, host) = plan.compiles
    assert cu.endswith("scale.cu") and cpp.endswith("binding.cpp")
    assert nvcc[:3] == ["/usr/local/cuda-13.0/bin/nvcc", "-ccbin", "g++"]
    assert host[0] == "g++"
    python = f"-I{python_include()}"
    for command in (nvcc, host):
        assert python in command  # the interpreter's own Python.h, as setuptools passes it
        assert f"-I{tmp_path}/torch-{release}/torch/include" in command
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
    job = _job(tmp_path, "no-abi-define", ["-gencode", "arch=compute_80,code=sm_80"])
    (_, nvcc), _ = build_plan(job, flags_of(tmp_path / "read", "no-abi-define")).compiles
    assert not any(f.startswith("-gencode=") for f in nvcc)
    assert nvcc.count("-gencode") == 1


def test_a_torch_with_its_libraries_is_linked_against_them(tmp_path: Path) -> None:
    job = _job(tmp_path, "no-abi-define")
    lib = tmp_path / "torch-no-abi-define" / "torch" / "lib"
    lib.mkdir()
    (lib / "libtorch.so").write_bytes(b"")
    plan = build_plan(job, flags_of(tmp_path / "read", "no-abi-define"))
    assert plan.link is not None and plan.note == ""
    assert plan.link[:2] == ["g++", "-shared"]
    assert [f for f in plan.link if f.startswith("-l")] == [f"-l{n}" for n in CUDA_LIBRARIES]
    assert f"-L{lib}" in plan.link
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    assert plan.link[-1] == str(tmp_path / "cell" / "objects" / f"scale_ext{suffix}")
    assert [str(o) for o in plan.objects] == plan.link[2:4]
