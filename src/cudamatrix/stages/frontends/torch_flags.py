"""What `torch.utils.cpp_extension.CUDAExtension` gives the compilers, read from one torch
release's own files, never typed here.

A table of torch's flags written into this tool drifts with every release (2.5 builds
with the old C++ ABI and passes pybind11's ABI names, 2.7 with the new one, 2.9 passes
neither), and an extension built with another release's flags compiles against headers
its torch never had. So each cell reads its torch's ``torch/utils/cpp_extension.py``
with `ast` (the text is never run: it imports torch) and its
``torch/share/cmake/Torch/TorchConfig.cmake`` (the C++ ABI torch's libraries were built
with, as `find_package(Torch)` hands it on):

- ``COMMON_NVCC_FLAGS``, the module's list every ``.cu`` gets;
- the flags ``unix_cuda_flags`` puts after them (``--compiler-options '-fPIC'``);
- the C++ standard ``append_std17_if_no_std_present`` adds where none is given;
- the defines ``BuildExtension`` adds with ``_add_compile_flag``
  (``-DTORCH_API_INCLUDE_EXTENSION_H``, ``-DTORCH_EXTENSION_NAME={name}``), the names of
  the pybind11 ABI defines it takes from ``torch._C`` (their values are the compiled
  torch's: known only where that torch imports), and whether it adds
  ``-D_GLIBCXX_USE_CXX11_ABI``;
- the libraries ``CUDAExtension`` links (its CUDA branch, not its ROCm one).
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ...errors import Failure

CPP_EXTENSION = Path("utils") / "cpp_extension.py"
TORCH_CONFIG = Path("share") / "cmake" / "Torch" / "TorchConfig.cmake"
_ABI_DEFINE = "-D_GLIBCXX_USE_CXX11_ABI="
_CMAKE_ABI = re.compile(r"-D_GLIBCXX_USE_CXX11_ABI=([01])")


@dataclass(frozen=True)
class TorchFlags:
    """One torch release's CUDAExtension flags, as its own files give them."""

    nvcc: tuple[str, ...]  # COMMON_NVCC_FLAGS, then what unix_cuda_flags adds
    std: str | None  # the C++ standard added where a file's flags name none ("c++17")
    defines: tuple[str, ...]  # the constant ones (-DTORCH_API_INCLUDE_EXTENSION_H)
    names_extension: bool  # -DTORCH_EXTENSION_NAME=<the extension's name>
    pybind11_names: tuple[str, ...]  # PYBIND11_<name>, valued from the built torch._C
    cxx11_abi: int | None  # -D_GLIBCXX_USE_CXX11_ABI=N; None: the release passes none
    libraries: tuple[str, ...]  # what CUDAExtension links (-l)

    def defines_for(self, extension: str, pybind11: dict[str, str] | None = None
                    ) -> list[str]:
        """The defines every file of the extension `extension` is compiled with; the
        pybind11 ABI ones where `pybind11` (the importable torch's values) is given."""
        found = list(self.defines)
        for name in self.pybind11_names:
            value = (pybind11 or {}).get(name)
            if value is not None:
                found.append(f'-DPYBIND11_{name}="{value}"')
        if self.names_extension:
            found.append(f"-DTORCH_EXTENSION_NAME={extension}")
        if self.cxx11_abi is not None:
            found.append(f"{_ABI_DEFINE}{self.cxx11_abi}")
        return found

    def with_std(self, flags: list[str]) -> list[str]:
        """`flags` with the release's standard added where they name none, as
        append_std17_if_no_std_present does."""
        if self.std is None or any(f.startswith("-std=") for f in flags):
            return flags
        return [*flags, f"-std={self.std}"]


def _strings(node: ast.AST) -> list[str] | None:
    """A list or tuple of string constants, else None."""
    if isinstance(node, ast.List | ast.Tuple) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [str(e.value) for e in node.elts if isinstance(e, ast.Constant)]
    return None


def _function(tree: ast.AST, name: str) -> ast.FunctionDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name),
                None)


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _common_nvcc(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "COMMON_NVCC_FLAGS" for t in node.targets):
            return _strings(node.value)
    return None


def _after_common(tree: ast.Module) -> list[str]:
    """What unix_cuda_flags adds after COMMON_NVCC_FLAGS: its list literal of strings
    (``['--compiler-options', "'-fPIC'"]``), the shell's quotes taken off as the shell
    takes them (the build runs it through one)."""
    function = _function(tree, "unix_cuda_flags")
    if function is None:
        return []
    for node in ast.walk(function):
        words = _strings(node)
        if words and any(w.startswith("-") for w in words):
            return [part for word in words for part in shlex.split(word)]
    return []


def _std(tree: ast.Module) -> str | None:
    function = _function(tree, "append_std17_if_no_std_present")
    if function is None:
        return None
    return next((str(n.value) for n in ast.walk(function) if isinstance(n, ast.Constant)
                 and isinstance(n.value, str) and n.value.startswith("c++")), None)


def _added_flags(tree: ast.Module) -> tuple[list[str], bool, list[str], bool]:
    """The flags BuildExtension adds through `_add_compile_flag`: the constant defines,
    whether one names the extension, the pybind11 names (the loop's list) and whether the
    C++ ABI define is added. A flag under `py_limited_api` or a HIP branch is another
    kind of build's, not taken."""
    constants: list[str] = []
    names_extension = abi = False
    pybind11: list[str] = []
    loops: dict[int, list[str]] = {}  # each `for name in [...]` body node's list
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and (words := _strings(node.iter)) is not None:
            for inner in ast.walk(node):
                loops[id(inner)] = words
        if isinstance(node, ast.If) and (_mentions(node.test, "IS_HIP_EXTENSION")
                                         or _mentions(node.test, "py_limited_api")
                                         or any(isinstance(a, ast.Attribute)
                                                and a.attr == "py_limited_api"
                                                for a in ast.walk(node.test))):
            for part in node.body:
                skipped.update(id(n) for n in ast.walk(part))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "_add_compile_flag" and len(node.args) == 2):
            continue
        if id(node) in skipped:
            continue
        flag = node.args[1]
        if isinstance(flag, ast.Constant) and isinstance(flag.value, str):
            constants.append(flag.value)
        elif isinstance(flag, ast.JoinedStr):
            text = "".join(str(p.value) if isinstance(p, ast.Constant) else "{}"
                           for p in flag.values)
            if text.startswith("-DTORCH_EXTENSION_NAME="):
                names_extension = True
            elif text.startswith("-DPYBIND11_") and id(node) in loops:
                pybind11 = loops[id(node)]
        elif isinstance(flag, ast.Name) and flag.id == "define":
            names_extension = True  # `define = f'-DTORCH_EXTENSION_NAME={name}'`
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str)
               and n.value.startswith(_ABI_DEFINE) for n in ast.walk(flag)):
            abi = True
    return constants, names_extension, pybind11, abi


def _libraries(tree: ast.Module) -> list[str]:
    """The libraries CUDAExtension appends, its CUDA branch's (a HIP branch's body is
    skipped, its else taken)."""
    function = _function(tree, "CUDAExtension")
    if function is None:
        return []
    found: list[str] = []

    def visit(statements: list[ast.stmt]) -> None:
        for statement in statements:
            if isinstance(statement, ast.If):
                if _mentions(statement.test, "IS_HIP_EXTENSION"):
                    visit(statement.orelse)
                else:
                    visit(statement.body)
                continue
            for node in ast.walk(statement):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr == "append" and isinstance(node.func.value, ast.Name) \
                        and node.func.value.id == "libraries" and node.args \
                        and isinstance(node.args[0], ast.Constant):
                    found.append(str(node.args[0].value))

    visit(function.body)
    return list(dict.fromkeys(found))


def cmake_abi(text: str) -> int | None:
    """The C++ ABI TorchConfig.cmake hands a CMake build (TORCH_CXX_FLAGS), if it names one."""
    found = _CMAKE_ABI.search(text)
    return int(found.group(1)) if found else None


def parse_flags(cpp_extension: str, torch_config: str | None) -> TorchFlags | Failure:
    """A release's flags from the text of its cpp_extension.py and TorchConfig.cmake."""
    try:
        tree = ast.parse(cpp_extension)
    except SyntaxError as exc:
        return Failure(f"cpp_extension.py does not parse ({exc.msg}, line {exc.lineno})")
    common = _common_nvcc(tree)
    if common is None:
        return Failure("cpp_extension.py has no COMMON_NVCC_FLAGS list")
    constants, names_extension, pybind11, adds_abi = _added_flags(tree)
    abi = None
    if adds_abi:
        abi = cmake_abi(torch_config or "")
        if abi is None:
            return Failure("cpp_extension.py adds -D_GLIBCXX_USE_CXX11_ABI, and "
                           "TorchConfig.cmake names no value for it")
    return TorchFlags(nvcc=(*common, *_after_common(tree)), std=_std(tree),
                      defines=tuple(c for c in constants if c.startswith("-D")),
                      names_extension=names_extension, pybind11_names=tuple(pybind11),
                      cxx11_abi=abi, libraries=tuple(_libraries(tree)))


def read_flags(torch_package: Path) -> TorchFlags | Failure:
    """The flags of the torch whose package folder (``.../torch``) is `torch_package`."""
    try:
        text = (torch_package / CPP_EXTENSION).read_text(encoding="utf-8")
    except OSError as exc:
        return Failure(f"{torch_package / CPP_EXTENSION}: {exc.strerror or exc}")
    config = torch_package / TORCH_CONFIG
    return parse_flags(text, config.read_text(encoding="utf-8") if config.is_file() else None)
