"""The host provider: the toolkit already installed on this machine."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from ..errors import EnvironmentUnavailable
from ..stages.cell.environment import Environment, installed_packages
from .tree import describe_toolkit_tree


def host_root() -> Path:
    return Path(os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda")


def host_toolkit_version(root: Path) -> str:
    """The ``major.minor`` of the installed toolkit, as its nvcc or ptxas reports it."""
    for tool in (root / "bin" / "nvcc", root / "bin" / "ptxas"):
        if tool.exists():
            out = subprocess.run([str(tool), "--version"], capture_output=True, text=True,
                                 timeout=30, check=False).stdout
            match = re.search(r"release (\d+\.\d+)", out)
            if match:
                return match.group(1)
    raise EnvironmentUnavailable(f"no CUDA toolkit at {root} (set CUDA_HOME to its folder)")


def prepare_host() -> Environment:
    root = host_root().resolve()
    version = host_toolkit_version(root)
    packages = installed_packages(root / "dist-info") if (root / "dist-info").is_dir() else {}
    env = describe_toolkit_tree(version, "host", root, packages, root)
    # A classic install keeps its headers in one include folder.
    if (root / "include").is_dir():
        includes = [str(root / "include")]
        if (root / "include" / "cccl").is_dir():
            includes.append(str(root / "include" / "cccl"))
        env = Environment(**{**env.to_dict(), "include_dirs": tuple(includes)})
    return env
