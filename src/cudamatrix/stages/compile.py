"""The compile stage, one function per frontend, all ending in PTX and a cubin on disk.

- nvrtc: NVRTC to PTX, then the same toolkit's ptxas to a cubin (``-v`` for the
  resource usage). Every toolkit, wheel or not, has both.
- nvcc / cutlass: nvcc to a cubin with the PTX kept; CUTLASS cells add the
  headers of their CUTLASS version.
- cute-dsl: the case's Python script compiles through the DSL and reports back.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..audit.facts import shipped_images
from ..providers.environment import Environment
from ..versions import Arch
from .cell_files import CUBIN, LIBRARY, PTX, SCRIPT_STACK_FILE
from .flags import resolve_flags, shown
from .hang import STACK_LEAD_S
from .job import Job
from .kernel_names import (
    KERNEL_RECORD,
    KERNEL_REFUSED,
    KernelName,
    cpp_names,
    demangle,
    is_mangled,
)
from .limits import address_space_limit, run_tool
from .logs import decisive_line, missing_include, resource_usage, warning_lines
from .nvrtc import Nvrtc
from .result import StageResult, Status


@dataclass(frozen=True)
class Build:
    """The compile stage's result plus where its artifacts landed."""

    result: StageResult
    ptx: Path | None = None
    cubin: Path | None = None
    library: Path | None = None


def _failure(job: Job, log: str, started: float, accident: str | None = None,
             **details: object) -> Build:
    """A refused compile; `unavailable` (a skip) when what the compiler could not open is a
    public header the toolkit's own packages do not ship, so the toolkit, not the code,
    is what is missing; `error` when the compiler did not finish on its own (a signal,
    the memory limit), which says nothing about the code and is never cached."""
    if accident:
        return Build(StageResult("compile", "error", accident, log, time.monotonic() - started,
                                 {**details, "accident": accident}))
    status: Status = "failed"
    message = decisive_line(log)
    header = missing_include(log)
    lacking = job.env.lacks_header(header) if header and job.env else None
    if lacking:
        status, message = "unavailable", lacking
    return Build(StageResult("compile", status, message, log, time.monotonic() - started,
                             dict(details)))


def _compiled(job: Job, log: str, started: float, details: dict[str, object],
              ptx: Path | None, cubin: Path | None, library: Path | None = None) -> Build:
    """A successful compile: its resource usage and warnings read off the tools' own log,
    and what the build ships (SASS arch, PTX ISA, sizes), read off the artifacts as the
    audit reads a wheel's."""
    # Each kernel also by the name its author writes (the report shows that one).
    usages = resource_usage(log)
    details["resources"] = [{**usage, "name": name} for usage, name in
                            zip(usages, cpp_names([u["kernel"] for u in usages]), strict=True)]
    details["warnings"] = warning_lines(log)
    details["ships"] = shipped_images(cubin, ptx, job.arch)
    return Build(StageResult("compile", "ok", "", log, time.monotonic() - started, details),
                 ptx, cubin, library)


def _ptxas(job: Job, ptx: Path, started: float, nvrtc_log: str,
           details: dict[str, object]) -> Build:
    """PTX built for NVRTC's default virtual arch, assembled for the cell's GPU by the
    toolkit's ptxas: what a driver would do with it when the case names no arch."""
    assert job.env is not None and job.env.ptxas is not None
    cubin = job.work / CUBIN
    remaining = max(1.0, job.timeout - (time.monotonic() - started))
    # Run where the files are, so messages name kernel.ptx rather than a long path.
    command = [job.env.ptxas, f"-arch={job.arch}", "-v", "-o", cubin.name, ptx.name]
    tool = run_tool(command, remaining, memory_bytes=job.memory_bytes, cwd=job.work)
    full_log = "\n".join(part for part in (nvrtc_log, f"$ ptxas -arch={job.arch} -v",
                                            tool.output) if part)
    if tool.code != 0:
        return _failure(job, full_log, started, tool.accident, **details)
    return _compiled(job, full_log, started, details, ptx, cubin)


def compile_nvrtc(job: Job) -> Build:
    """NVRTC as a library built on it would call it: straight to a cubin for the cell's real
    arch (CuPy's path), so every option reaches the code generator (``--maxrregcount``,
    ``-Xptxas``) and the resource usage is NVRTC's own; the PTX is kept for inspection."""
    started = time.monotonic()
    assert job.env is not None and job.env.nvrtc is not None
    source = Path(job.source)
    options = resolve_flags(job.flags, str(source.parent), job.env)
    if job.arch_flag:
        options += [f"--gpu-architecture={Arch.parse(job.arch).name}", "-Xptxas=-v"]
    # NVRTC sees the source as text with a bare name: the case's own headers must be
    # put on its search path, as nvcc would find them beside the file.
    options.append(f"-I{source.parent}")
    for folder in job.env.include_dirs + (job.library.include_dirs if job.library else ()):
        options.append(f"-I{folder}")
    nvrtc = Nvrtc(job.env.nvrtc)
    # The case's kernel as C++ names it, given to NVRTC to instantiate and lower; a name
    # already as the module holds it (mangled) is looked up as it is.
    expressions = [job.kernel] if job.kernel and not job.host_entry \
        and not is_mangled(job.kernel) else []
    with address_space_limit(job.memory_bytes):
        output = nvrtc.compile(source.read_bytes(), source.name, options, expressions)
    details: dict[str, object] = {"nvrtc": nvrtc.version,
                                  "options": shown(options, job.env)}
    if not output.ok and expressions and not output.accident:
        # Refused with the kernel's name: compiled without it, NVRTC says whether the
        # code or the name is at fault (an overload, a template with no arguments, a
        # name the source lacks); the name's refusal is then the case's error.
        with address_space_limit(job.memory_bytes):
            plain = nvrtc.compile(source.read_bytes(), source.name, options)
        if plain.ok:
            details[KERNEL_REFUSED] = decisive_line(output.log)
            output = plain
    elif output.ok and expressions:
        lowered = output.lowered[expressions[0]]
        details[KERNEL_RECORD] = KernelName(expressions[0], lowered, demangle(lowered)).to_dict()
    log = f"$ {shown(['nvrtc', nvrtc.version, *options], job.env)}\n{output.log}".strip()
    if not output.ok:
        return _failure(job, log, started, output.accident, **details)
    ptx = job.work / PTX
    ptx.write_bytes(output.ptx)
    if output.cubin:
        cubin = job.work / CUBIN
        cubin.write_bytes(output.cubin)
        return _compiled(job, log, started, details, ptx, cubin)
    return _ptxas(job, ptx, started, log, details)


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
        return _failure(job, full_log, started, tool.accident, **details)
    ptx = job.work / PTX
    for pattern, target in (("*.ptx", ptx), ("*.cubin", cubin)):
        found = sorted(keep.glob(pattern))
        if found and not target.exists():
            target.write_bytes(found[0].read_bytes())
    shutil.rmtree(keep, ignore_errors=True)
    return _compiled(job, full_log, started, details, ptx if ptx.exists() else None,
                     cubin if cubin.exists() else None,
                     library if job.host_entry and library.exists() else None)


def compile_script(job: Job) -> Build:
    """A Python case (CuTe DSL): the script compiles and prints one JSON object last.

    The script sees ``CUDAMATRIX_ARCH`` and ``CUDAMATRIX_WORKDIR`` (and
    ``CUTE_DSL_ARCH``); it exits non-zero with its reason on stderr when the
    behaviour it checks is wrong, and may write ``kernel.ptx``/``kernel.cubin``.
    """
    started = time.monotonic()
    env = dict(os.environ)
    env.update(CUDAMATRIX_SITE_DIRS=os.pathsep.join(job.library.python_path if job.library else ()),
               CUDAMATRIX_ARCH=job.arch, CUDAMATRIX_WORKDIR=job.workdir, CUTE_DSL_ARCH=job.arch,
               CUTE_DSL_CACHE_DIR=str(job.work / "dsl-cache"),
               CUDAMATRIX_STACK_FILE=str(job.work / SCRIPT_STACK_FILE),
               CUDAMATRIX_STACK_AFTER=str(max(1.0, job.timeout - 2 * STACK_LEAD_S)),
               CUDAMATRIX_LIBRARY_INCLUDES=os.pathsep.join(
                   job.library.include_dirs if job.library else ()))
    if job.env is not None:  # a script with a toolkit: what a build of its output needs
        env.update(CUDAMATRIX_NVCC=job.env.nvcc or "",
                   CUDAMATRIX_HOST_COMPILER=job.host_compiler or job.env.host_compiler or "",
                   CUDAMATRIX_TOOLKIT_INCLUDES=os.pathsep.join(job.env.include_dirs),
                   CUDAMATRIX_TOOLKIT_LIBRARY_DIRS=os.pathsep.join(job.env.library_dirs))
    tool = run_tool([sys.executable, "-m", "cudamatrix.stages.pyscript", job.source,
                     *job.flags], job.timeout, memory_bytes=job.memory_bytes, env=env,
                    cwd=job.work)
    log = tool.output
    details: dict[str, object] = {}
    for line in reversed(log.splitlines()):
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                details["report"] = json.loads(line)
            break
    if tool.code != 0:
        return _failure(job, log, started, tool.accident, **details)
    ptx, cubin = job.work / PTX, job.work / CUBIN
    return Build(StageResult("compile", "ok", "", log, time.monotonic() - started, details),
                 ptx if ptx.exists() else None, cubin if cubin.exists() else None)


def compile_clang(job: Job) -> Build:
    """clang as the CUDA compiler, device code only, as a clang-built library's device
    half: a cubin for the cell's arch (through the toolkit's ptxas) and the PTX."""
    started = time.monotonic()
    assert job.env is not None and job.env.clang and job.env.clang_cuda_path
    flags = resolve_flags(job.flags, str(Path(job.source).parent), job.env)
    base = [job.env.clang, "-x", "cuda", f"--cuda-path={job.env.clang_cuda_path}",
            f"--cuda-gpu-arch={Arch.parse(job.arch).name}", "--cuda-device-only", *flags]
    cubin, ptx = job.work / CUBIN, job.work / PTX
    logs: list[str] = []
    details: dict[str, object] = {"clang": job.env.tool_versions.get("clang", "unknown")}
    for outputs in (["-c", "-Xcuda-ptxas", "-v", "-o", str(cubin)], ["-S", "-o", str(ptx)]):
        command = [*base, *outputs, job.source]
        tool = run_tool(command, max(1.0, job.timeout - (time.monotonic() - started)),
                        memory_bytes=job.memory_bytes, cwd=job.work)
        logs.append(f"$ {shown([Path(command[0]).name, *command[1:]], job.env)}\n{tool.output}")
        if tool.code != 0:
            return _failure(job, "\n".join(logs).strip(), started, tool.accident, **details)
    return _compiled(job, "\n".join(logs).strip(), started, details, ptx, cubin)
