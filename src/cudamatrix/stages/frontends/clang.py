"""clang: clang as the CUDA compiler, through the toolkit's ptxas: the device code for the
cell's arch (a cubin and the PTX) and the host code (an object), as a build compiles it."""

from __future__ import annotations

import time

from ...common.versions import Arch
from ..cell.files import CUBIN, OBJECT, PTX
from ..cell.job import Job
from ..compile.built import Build, build_failure, build_success
from ..compile.flags import resolve_flags, shown
from ..compile.kernel_probe import PROBE_PTX, PROBE_SOURCE, compiler_named
from ..inspect.stage import entry_names
from ..process.limits import run_tool
from .registry import Frontend, Line, register


def _common(job: Job) -> list[str]:
    assert job.env is not None and job.env.clang and job.env.clang_cuda_path
    return [job.env.clang, "-x", "cuda", f"--cuda-path={job.env.clang_cuda_path}",
            f"--cuda-gpu-arch={Arch.parse(job.arch).name}"]


def _shaping(job: Job) -> list[str]:
    """The words that shape what clang makes of the unit, the same on the device, host
    and probe lines: the case's flags and dialect, then a header library's folders (-I is
    searched before the CUDA path's own)."""
    libraries = [f"-I{d}" for d in (job.library.include_dirs if job.library else ())]
    std = [f"-std={job.std}"] if job.std is not None else []
    return [*resolve_flags(job.flags, job.case_folder, job.env), *std, *libraries]


def clang_lines(job: Job, line: Line) -> list[list[str]]:
    """Every clang line of a cell, one maker (Frontend.command_lines). The compile (and its
    repro, the same lines): the device code for the arch (ptxas reporting its figures, the
    case's `maxrregcount` given to it), its PTX, then the host code: a host-only error is
    the compile's failure, with clang's own line. The probe: device-only PTX of the probe
    source, without ptxas's words (-S runs no ptxas). No preprocessing: the since-which-arch
    search is nvcc's and NVRTC's."""
    device = [*_common(job), "--cuda-device-only", *_shaping(job)]
    if line.purpose == "probe":
        return [[*device, "-S", "-o", str(job.work / PROBE_PTX), str(job.work / PROBE_SOURCE)]]
    if line.purpose not in ("compile", "repro"):
        return []
    ptxas = ["-Xcuda-ptxas", "-v"]
    if job.maxrregcount is not None:
        ptxas += ["-Xcuda-ptxas", f"--maxrregcount={job.maxrregcount}"]
    host = [*_common(job), "--cuda-host-only", *_shaping(job), "-c", "-o",
            str(job.work / OBJECT)]
    return [[*device, "-c", *ptxas, "-o", str(job.work / CUBIN), job.source],
            [*device, "-S", "-o", str(job.work / PTX), job.source], [*host, job.source]]


def compile_clang(job: Job) -> Build:
    """clang as the CUDA compiler, device code only, as a clang-built library's device
    half: a cubin for the cell's arch (through the toolkit's ptxas) and the PTX."""
    started = time.monotonic()
    assert job.env is not None
    logs: list[str] = []
    details: dict[str, object] = {"clang": job.env.tool_versions.get("clang", "unknown")}
    ptx = job.work / PTX
    for command in clang_lines(job, Line("compile")):
        tool = run_tool(command, max(1.0, job.timeout - (time.monotonic() - started)),
                        memory_bytes=job.memory_bytes, cwd=job.work)
        logs.append(f"$ {shown(command)}\n{tool.output}")
        if tool.code != 0:
            return build_failure(job, "\n".join(logs).strip(), started, tool.accident, **details)
    # The case's kernel as this clang resolves the name, where the module's kernels do
    # not hold it as written (kernel_probe.py).
    entries = entry_names(ptx.read_text(errors="replace")) if ptx.is_file() else None
    details.update(compiler_named(job, entries, job.timeout - (time.monotonic() - started),
                                  clang_lines(job, Line("probe"))[0]))
    return build_success(job, "\n".join(logs).strip(), started, details, ptx, job.work / CUBIN)


register(Frontend("clang", compile=compile_clang, command_lines=clang_lines, needs=("clang",),
                  reports_resources=True))
