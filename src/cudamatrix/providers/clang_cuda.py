"""clang as a CUDA compiler against a wheel toolkit (issue 12, point 4).

``clang++ -x cuda --cuda-path=DIR`` wants a CUDA installation's layout: ``include/``
(clang's runtime wrapper also includes curand's ``curand_mtgp32_kernel.h``),
``nvvm/libdevice`` and ``bin/ptxas``. The wheels lay the same files out otherwise, so the
cache gets a folder of links in that layout per toolkit; curand's headers are the
release's own (a wheel toolkit holds every component's headers), or, for a toolkit
without them, the newest ``nvidia-curand`` wheel's of its CUDA major.
The clang used is the newest ``clang++-N`` on PATH; what it says about the CUDA version
(``CUDA version 12.4 is only partially supported``) is a warning of the cell like any other.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..common.up_to_date import InputLedger
from ..errors import EnvironmentUnavailable
from ..stages.cell.environment import Environment
from .cuda_root import linked_cuda_root
from .wheels import wheel_headers


@dataclass(frozen=True)
class Clang:
    path: str
    version: str


@functools.cache
def find_clang() -> Clang | None:
    """The newest clang++ on PATH (clang++-N or plain clang++)."""
    best: tuple[int, Clang] | None = None
    for name in ["clang++", *(f"clang++-{n}" for n in range(10, 30))]:
        path = shutil.which(name)
        if not path:
            continue
        said = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
        found = re.search(r"clang version (\d+)\.(\d+)\.(\d+)", said.stdout)
        if found and (best is None or int(found.group(1)) > best[0]):
            best = (int(found.group(1)), Clang(path, ".".join(found.groups())))
    return best[1] if best else None


def _curand_package(major: int) -> str:
    return "nvidia-curand" if major >= 13 else f"nvidia-curand-cu{major}"


def curand_headers(major: int, cache: Path, ledger: InputLedger) -> Path:
    """The include folder of the newest curand wheel for CUDA `major`, extracted once."""
    package = _curand_package(major)
    folders = wheel_headers(cache / "clang" / f"curand-{major}", [package], ledger)
    found = next((Path(f) for f in folders if (Path(f) / "curand.h").is_file()), None)
    if found is None:
        raise EnvironmentUnavailable(f"the {package} wheel holds no curand.h")
    return found


def cuda_path(env: Environment, cache: Path, ledger: InputLedger) -> Path:
    """A CUDA-installation-shaped folder of links to the wheel toolkit's files."""
    if env.ptxas is None:
        raise EnvironmentUnavailable(f"toolkit {env.toolkit} has no ptxas for clang")
    libdevice = next(Path(env.root).glob("nvidia/**/nvvm/libdevice"), None)
    if libdevice is None:
        raise EnvironmentUnavailable(f"toolkit {env.toolkit} has no nvvm/libdevice for clang")
    folders = list(map(Path, env.include_dirs))
    # clang's CUDA wrappers include cuRAND's headers: the toolkit's own release has them
    # (release_headers.py); a toolkit that lacks them gets the newest cuRAND's.
    if not any((folder / "curand.h").is_file() for folder in folders):
        folders.append(curand_headers(int(env.toolkit.split(".")[0]), cache, ledger))
    return linked_cuda_root(cache / "clang" / f"cuda-{env.toolkit}", folders,
                            {"nvvm/libdevice": libdevice, "bin/ptxas": Path(env.ptxas)})
