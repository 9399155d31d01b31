"""What every process a cell runs in is told, so that no cache but the tool's own decides
a verdict.

NVRTC from CUDA 12.9 on, with a driver present, keeps what it compiled in
``~/.nv/ComputeCache``, and the driver keeps its PTX JIT there too; a hit prints no
``ptxas info`` lines, so a resource budget had no figures on a GPU runner's second run
(and a case that another compiled first). ``CUDA_CACHE_DISABLE=1`` turns both off: a
cell's compile is the compiler's work, every time, on every machine. The tool's own
compile cache (orchestrator/compile_cache.py) keys every input instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# The variables set in every cell's process (workers, their warm servers, the GPU
# servers, containers' workers), and so in every compiler, build and test they start.
HERMETIC_ENVIRONMENT = {"CUDA_CACHE_DISABLE": "1"}


def hermetic(variables: Mapping[str, str]) -> dict[str, str]:
    """`variables` with the hermetic ones set over them."""
    return {**variables, **HERMETIC_ENVIRONMENT}


def make_this_process_hermetic() -> None:
    """Set them in this process: the first thing a cell's process does."""
    os.environ.update(HERMETIC_ENVIRONMENT)
