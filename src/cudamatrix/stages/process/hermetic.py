"""What every process a cell runs in is told, so that no cache but the tool's own decides
a verdict.

NVRTC from CUDA 12.9 on, with a driver present, keeps what it compiled in
``~/.nv/ComputeCache``, and the driver keeps its PTX JIT there too; a hit prints no
``ptxas info`` lines, so a resource budget had no figures on a GPU runner's second run
(and a case that another compiled first). ``CUDA_CACHE_DISABLE=1`` turns both off: a
cell's compile is the compiler's work, every time, on every machine. The tool's own
compile cache (orchestrator/compile_cache.py) keys every input instead.

The driver's PTX JIT is the one cache kept, in a folder of the tool's own: a GPU server
(whose process compiles nothing) is handed ``CUDAMATRIX_JIT_CACHE``, a folder under the
cudamatrix cache for its driver and GPU, and points ``CUDA_CACHE_PATH`` there. An sm_80
GEMM's PTX took 7.6 s to JIT on an H100 on every run; the JIT's output is the driver's
translation of that PTX for that GPU, so a hit changes no verdict (the determinism check,
caches off and in reverse order, is the proof). ``--no-compile-cache`` runs it cold.
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


# The folder a GPU server keeps the driver's PTX JIT in, where the run keeps one.
JIT_CACHE_ENV = "CUDAMATRIX_JIT_CACHE"
# The driver's cache limit (its default is 256 MiB on older drivers): a CUTLASS corpus's
# JIT output is larger.
JIT_CACHE_BYTES = str(4 << 30)


def make_this_process_hermetic() -> None:
    """Set them in this process: the first thing a cell's process does."""
    os.environ.update(HERMETIC_ENVIRONMENT)


def keep_the_driver_jit(folder: str | None) -> None:
    """A GPU server's process: the driver's PTX JIT cached in `folder` (the tool's own, for
    this driver and GPU), where the run keeps one; else off, as in every cell's process."""
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    os.environ.pop("CUDA_CACHE_DISABLE", None)
    os.environ["CUDA_CACHE_PATH"] = folder
    os.environ["CUDA_CACHE_MAXSIZE"] = JIT_CACHE_BYTES
