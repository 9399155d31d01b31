"""Reading a toolkit tree: its compilers, include folders and exact tool versions.

One reader serves every provider: a wheels tree (``nvidia/<package>/...`` or CUDA 13's
``nvidia/cu13``), a classic install (``/usr/local/cuda``), and the same trees inside
container images.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

from .environment import Environment


def _tool_version(tool: Path) -> str:
    try:
        text = subprocess.run([str(tool), "--version"], capture_output=True, text=True,
                              timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    match = re.search(r"V(\d+\.\d+\.\d+)", text)
    return match.group(1) if match else "unknown"


def _first(paths: Iterator[Path]) -> Path | None:
    found = sorted(paths)
    return found[0] if found else None


def describe_toolkit_tree(toolkit: str, provider: str, root: Path, packages: dict[str, str],
                          search: Path) -> Environment:
    """Find the compilers and headers in a toolkit tree (wheel layout or a classic install)."""
    nvrtc = _first(p for p in search.glob("**/libnvrtc.so*")
                   if re.fullmatch(r"libnvrtc\.so\.\d+(\.\d+)*", p.name) and p.is_file())
    ptxas = _first(search.glob("**/bin/ptxas"))
    nvcc = _first(search.glob("**/bin/nvcc"))
    includes = []
    for folder in sorted(search.glob("**/include")):
        headers = {p.name for p in folder.glob("*.h")} if folder.is_dir() else set()
        # The nvrtc wheel's include folder holds nvrtc.h alone: nothing a kernel includes.
        if headers - {"nvrtc.h"}:
            includes.append(folder)
            if (folder / "cccl").is_dir():
                includes.append(folder / "cccl")
    # cuda_runtime first: its mma.h / cuda_fp16.h are the public entry points.
    includes.sort(key=lambda p: (0 if "runtime" in str(p) else 1, str(p)))
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
        # NVRTC loads its builtins library by name: the folder must be on the search path.
        library_dirs=(str(nvrtc.parent),) if nvrtc else (),
        packages=packages,
        tool_versions=tool_versions,
    )
