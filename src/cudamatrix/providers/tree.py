"""Reading a toolkit tree: its compilers, include folders and exact tool versions.

One reader serves every provider: a wheels tree (``nvidia/<package>/...`` or CUDA 13's
``nvidia/cu13``), a classic install (``/usr/local/cuda``), and the same trees inside
container images.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from ..common.interruption import run_preparation
from ..stages.cell.cell_environment import cell_environment
from ..stages.cell.environment import Environment


def _tool_version(tool: Path) -> str:
    try:
        text = run_preparation([str(tool), "--version"], timeout=30,
                               env=cell_environment()).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    match = re.search(r"V(\d+\.\d+\.\d+)", text)
    return match.group(1) if match else "unknown"


def _first(paths: Iterator[Path]) -> Path | None:
    found = sorted(paths)
    return found[0] if found else None


# Bump when what the reader finds changes: descriptions kept beside installed trees
# by an older reader are then read again instead of trusted.
TREE_READER_VERSION = 7  # 7: nvcc's own arch list (nvcc_archs)

# Files a package's include folder may hold that no kernel includes: the nvrtc and
# nvvm wheels' own API headers, and the wheels' Python package markers.
_NOT_KERNEL_HEADERS = frozenset({"nvrtc.h", "nvvm.h", "__init__.py", "__pycache__"})


def header_folders(search: Path) -> list[Path]:
    """The include folders nvcc itself would search, in its order, for any toolkit layout.

    A wheels tree has one top-level ``include`` per package (``nvidia/cuda_runtime/include``,
    ``nvidia/cuda_cccl/include`` with only ``cub/ cuda/ nv/ thrust/`` in it, ...), CUDA 13
    one ``nvidia/cu13/include`` with CCCL in its ``cccl/``; a classic install has one
    ``include``. An ``include`` folder *inside* another (libcu++'s
    ``cuda/std/detail/libcxx/include``) is a library's internals, never an entry point,
    and a folder holding nothing but the nvrtc/nvvm API headers offers a kernel nothing.
    """
    found = []
    for folder in sorted(search.glob("**/include")):
        inside = folder.relative_to(search).parts[:-1]
        if not folder.is_dir() or "include" in inside:
            continue
        if {entry.name for entry in folder.iterdir()} - _NOT_KERNEL_HEADERS:
            found.append(folder)
            if (folder / "cccl").is_dir():
                found.append(folder / "cccl")
    # cuda_runtime first: its mma.h / cuda_fp16.h are the public entry points.
    found.sort(key=lambda p: (0 if "runtime" in str(p) else 1, str(p)))
    return found


# The public headers kernels include most, by the folder-relative name a kernel writes.
# A toolkit whose packages lack one cannot compile such a kernel: that is a fact about
# the packages (the 12.0-12.2 CCCL wheels ship only libcu++'s internals), not about CUDA.
PUBLIC_HEADERS = ("cuda/pipeline", "cuda/barrier", "cuda/std/atomic", "nv/target",
                  "cub/cub.cuh", "thrust/version.h", "cooperative_groups.h", "cuda_fp16.h",
                  "cuda_bf16.h", "mma.h")


def missing_headers(includes: list[Path]) -> tuple[str, ...]:
    return tuple(h for h in PUBLIC_HEADERS if not any((f / h).is_file() for f in includes))


_GPU_NAME_VALUES = re.compile(r"--gpu-name\b.*?Allowed values for this option:(.*?)Default value",
                              re.DOTALL)


def known_archs(ptxas: Path | None) -> tuple[str, ...]:
    """The real GPU architectures this toolkit's ptxas accepts, from its own ``--help``.

    ptxas is the one tool every toolkit layout carries (nvcc and NVRTC hand it their
    code), and it lists arch-specific (``sm_90a``) and family (``sm_100f``) targets that
    ``nvrtcGetSupportedArchs`` cannot express.
    """
    if ptxas is None:
        return ()
    try:
        text = run_preparation([str(ptxas), "--help"], timeout=30, env=cell_environment()).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    block = _GPU_NAME_VALUES.search(text)
    names = re.findall(r"'(sm_\d+[af]?)'", block.group(1)) if block else []
    return tuple(sorted(set(names), key=lambda n: (int(re.sub(r"\D", "", n)), n)))


# Run in a process of its own per toolkit: two libnvrtc.so.12 of different releases share a
# soname, and a second load in one process would answer with the first one's list.
_NVRTC_ARCHS = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
count = ctypes.c_int()
if lib.nvrtcGetNumSupportedArchs(ctypes.byref(count)) != 0:
    sys.exit(1)
archs = (ctypes.c_int * count.value)()
if lib.nvrtcGetSupportedArchs(archs) != 0:
    sys.exit(1)
print(" ".join(str(a) for a in archs))
"""


def nvrtc_archs(nvrtc: Path | None) -> tuple[str, ...]:
    """The archs this toolkit's NVRTC says it supports (``nvrtcGetSupportedArchs``): plain
    ``sm_XX`` only, as the call has no way to name ``a`` or ``f`` targets. A second
    source beside ptxas's list, to check the matrix's arch table against."""
    if nvrtc is None:
        return ()
    try:
        said = run_preparation([sys.executable, "-c", _NVRTC_ARCHS, str(nvrtc)], timeout=60,
                               env=cell_environment())
    except (OSError, subprocess.TimeoutExpired):
        return ()
    if said.returncode != 0:
        return ()
    return tuple(f"sm_{n}" for n in said.stdout.split() if n.isdigit())


def nvcc_archs(nvcc: Path | None) -> tuple[str, ...]:
    """The real archs this toolkit's nvcc says it builds (``--list-gpu-code``): plain
    ``sm_XX`` only, as it names no ``a`` or ``f`` targets. A third source beside ptxas's
    and NVRTC's lists, to check the matrix's arch table against."""
    if nvcc is None:
        return ()
    try:
        said = run_preparation([str(nvcc), "--list-gpu-code"], timeout=60, env=cell_environment())
    except (OSError, subprocess.TimeoutExpired):
        return ()
    if said.returncode != 0:
        return ()
    return tuple(name for name in said.stdout.split() if re.fullmatch(r"sm_\d+", name))


def describe_toolkit_tree(toolkit: str, provider: str, root: Path, packages: dict[str, str],
                          search: Path) -> Environment:
    """Find the compilers and headers in a toolkit tree (wheel layout or a classic install)."""
    nvrtc = _first(p for p in search.glob("**/libnvrtc.so*")
                   if re.fullmatch(r"libnvrtc\.so\.\d+(\.\d+)*", p.name) and p.is_file())
    ptxas = _first(search.glob("**/bin/ptxas"))
    nvcc = _first(search.glob("**/bin/nvcc"))
    cudart = _first(p for p in search.glob("**/libcudart.so*")
                    if re.fullmatch(r"libcudart\.so\.\d+(\.\d+)*", p.name))
    cuobjdump = _first(p for p in search.glob("**/bin/cuobjdump")
                       if (p.parent / "nvdisasm").is_file())
    includes = header_folders(search)
    tool_versions = {}
    for name, tool in (("ptxas", ptxas), ("nvcc", nvcc)):
        if tool is not None:
            tool_versions[name] = _tool_version(tool)
    return Environment(
        toolkit=toolkit,
        provider=provider,
        root=str(root),
        nvrtc=str(nvrtc) if nvrtc else None,
        ptxas=str(ptxas) if ptxas else None,
        nvcc=str(nvcc) if nvcc else None,
        include_dirs=tuple(str(p) for p in includes),
        # NVRTC loads its builtins library by name, and a library built against the
        # toolkit (CuPy) its shared cudart: their folders must be on the search path.
        library_dirs=tuple(dict.fromkeys(str(p.parent) for p in (nvrtc, cudart) if p)),
        packages=packages,
        tool_versions=tool_versions,
        known_archs=known_archs(ptxas),
        nvrtc_archs=nvrtc_archs(nvrtc),
        nvcc_archs=nvcc_archs(nvcc),
        cuobjdump=str(cuobjdump) if cuobjdump else None,
        missing_headers=missing_headers(includes),
    )
