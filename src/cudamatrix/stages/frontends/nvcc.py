"""nvcc: a cubin for the cell's arch with the PTX kept, or a whole shared library when the
case calls a host entry."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from ...providers.environment import Environment
from ...versions import Arch
from ..cell_files import CUBIN, LIBRARY, PTX
from ..compile import Build, build_failure, build_success
from ..flags import resolve_flags, shown
from ..job import Job
from ..limits import run_tool
from .registry import Frontend, register


def _cudart(env: Environment) -> list[str]:
    """How a host build links cudart: statically where the toolkit has the archive (nvcc's
    default), else the shared library by name (the 12.x wheels have only the .so)."""
    static = any((Path(d) / "libcudart_static.a").is_file() for d in env.library_dirs)
    return [] if static else ["-cudart", "none", "-lcudart"]


def compile_nvcc(job: Job) -> Build:
    started = time.monotonic()
    assert job.env is not None and job.env.nvcc is not None
    keep = job.work / "keep"
    keep.mkdir(parents=True, exist_ok=True)
    cubin = job.work / CUBIN
    library = job.work / LIBRARY
    # A host-entry case is built whole, as a shared library the run stage calls;
    # the PTX and cubin come out of the kept intermediate files either way.
    # Wheel toolkits keep libcudart_static.a where nvcc.profile does not look.
    output = ["-shared", "-Xcompiler", "-fPIC", "-o", str(library),
              *(f"-L{d}" for d in job.env.library_dirs), *_cudart(job.env)] if job.host_entry \
        else ["-cubin", "-o", str(cubin)]
    flags = resolve_flags(job.flags, str(Path(job.source).parent), job.env)
    command = [job.env.nvcc, *flags, *output, "-Xptxas", "-v", "--keep",
               "--keep-dir", str(keep)]
    host = job.host_compiler or job.env.host_compiler  # the case's, or the run's choice
    if host:
        command[1:1] = ["-ccbin", host]
    if job.arch_flag:
        arch = Arch.parse(job.arch)
        command.append(f"-gencode=arch={arch.compute},code={arch.name}")
    for folder in job.library.include_dirs if job.library else ():
        command.append(f"-I{folder}")
    command.append(job.source)
    logged = [Path(command[0]).name, *(c for c in command[1:] if c != "--keep-dir"
                                       and c != str(keep))]
    try:
        tool = run_tool(command, job.timeout, memory_bytes=job.memory_bytes, cwd=job.work)
    except subprocess.TimeoutExpired:
        shutil.rmtree(keep, ignore_errors=True)
        raise
    full_log = f"$ {shown(logged, job.env)}\n{tool.output}".strip()
    details: dict[str, object] = {"nvcc": job.env.tool_versions.get("nvcc", "unknown")}
    if tool.code != 0:
        shutil.rmtree(keep, ignore_errors=True)  # intermediates of a failed build are large
        return build_failure(job, full_log, started, tool.accident, **details)
    ptx = job.work / PTX
    for pattern, target in (("*.ptx", ptx), ("*.cubin", cubin)):
        found = sorted(keep.glob(pattern))
        if found and not target.exists():
            target.write_bytes(found[0].read_bytes())
    shutil.rmtree(keep, ignore_errors=True)
    return build_success(job, full_log, started, details, ptx if ptx.exists() else None,
                     cubin if cubin.exists() else None,
                     library if job.host_entry and library.exists() else None)


register(Frontend("nvcc", compile=compile_nvcc, needs=("nvcc",), reports_resources=True))
