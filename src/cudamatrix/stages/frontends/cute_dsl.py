"""cute-dsl: a Python case that compiles through the CuTe DSL and reports back; the
script runner is shared with the CUTLASS Python interface's frontends."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

from ..cell.cell_environment import cell_environment
from ..cell.files import CUBIN, PTX, SCRIPT_STACK_FILE
from ..cell.job import Job
from ..cell.result import StageResult
from ..compile.built import Build, build_failure
from ..process.hang import STACK_LEAD_S
from ..process.limits import run_tool
from .registry import Frontend, register


def compile_python_case(job: Job) -> Build:
    """A Python case (CuTe DSL): the script compiles and prints one JSON object last.

    The script sees ``CUDAMATRIX_ARCH`` and ``CUDAMATRIX_WORKDIR`` (and
    ``CUTE_DSL_ARCH``); it exits non-zero with its reason on stderr when the
    behaviour it checks is wrong, and may write ``kernel.ptx``/``kernel.cubin``.
    """
    started = time.monotonic()
    env: dict[str, str] = {}
    env.update(CUDAMATRIX_SITE_DIRS=os.pathsep.join(job.library.python_path if job.library else ()),
               CUDAMATRIX_ARCH=job.arch, CUDAMATRIX_WORKDIR=job.workdir, CUTE_DSL_ARCH=job.arch,
               CUTE_DSL_CACHE_DIR=str(job.work / "dsl-cache"),
               CUDAMATRIX_STACK_FILE=str(job.work / SCRIPT_STACK_FILE),
               CUDAMATRIX_STACK_AFTER=str(max(1.0, job.timeout - 2 * STACK_LEAD_S)),
               CUDAMATRIX_LIBRARY_INCLUDES=os.pathsep.join(
                   job.library.include_dirs if job.library else ()))
    if job.env is not None:  # a script with a toolkit: what a build of its output needs
        env.update(CUDAMATRIX_NVCC=job.env.nvcc or "",
                   CUDAMATRIX_HOST_COMPILER=job.host_compiler_path or job.env.host_compiler or "",
                   CUDAMATRIX_TOOLKIT_INCLUDES=os.pathsep.join(job.env.include_dirs),
                   CUDAMATRIX_TOOLKIT_LIBRARY_DIRS=os.pathsep.join(job.env.library_dirs))
    tool = run_tool([sys.executable, "-m", "cudamatrix.stages.process.pyscript", job.source,
                     *job.flags], job.timeout, memory_bytes=job.memory_bytes,
                    env=cell_environment(env),
                    cwd=job.work)
    log = tool.output
    details: dict[str, object] = {}
    for line in reversed(log.splitlines()):
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                details["report"] = json.loads(line)
            break
    if tool.code != 0:
        return build_failure(job, log, started, tool.accident, **details)
    ptx, cubin = job.work / PTX, job.work / CUBIN
    return Build(StageResult("compile", "ok", "", log, time.monotonic() - started, details),
                 ptx if ptx.exists() else None, cubin if cubin.exists() else None)


register(Frontend("cute-dsl", compile=compile_python_case, library="cute_dsl", toolkit_free=True,
                  guess_s=4.0))
