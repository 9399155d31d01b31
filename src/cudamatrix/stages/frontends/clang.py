"""clang: clang as the CUDA compiler, through the toolkit's ptxas: the device code for the
cell's arch (a cubin and the PTX) and the host code (an object), as a build compiles it."""

from __future__ import annotations

import time

from ...common.versions import Arch
from ..cell.files import CUBIN, OBJECT, PTX
from ..cell.job import Job
from ..compile.built import Build, build_failure, build_success
from ..compile.flags import resolve_flags, shown
from ..compile.kernel_probe import compiler_named
from ..inspect.stage import entry_names
from ..process.limits import run_tool
from .registry import Frontend, register


def compile_clang(job: Job) -> Build:
    """clang as the CUDA compiler, device code only, as a clang-built library's device
    half: a cubin for the cell's arch (through the toolkit's ptxas) and the PTX."""
    started = time.monotonic()
    assert job.env is not None and job.env.clang and job.env.clang_cuda_path
    flags = resolve_flags(job.flags, job.case_folder, job.env)
    # A header library's folders come first: -I is searched before the CUDA path's own.
    libraries = [f"-I{d}" for d in (job.library.include_dirs if job.library else ())]
    common = [job.env.clang, "-x", "cuda", f"--cuda-path={job.env.clang_cuda_path}",
              f"--cuda-gpu-arch={Arch.parse(job.arch).name}"]
    base = [*common, "--cuda-device-only", *flags, *libraries]
    cubin, ptx = job.work / CUBIN, job.work / PTX
    logs: list[str] = []
    details: dict[str, object] = {"clang": job.env.tool_versions.get("clang", "unknown")}
    # The device code for the arch, its PTX, then the host code: a host-only error is
    # the compile's failure, with clang's own line.
    host = [*common, "--cuda-host-only", *flags, *libraries, "-c", "-o", str(job.work / OBJECT)]
    for command in ([*base, "-c", "-Xcuda-ptxas", "-v", "-o", str(cubin), job.source],
                    [*base, "-S", "-o", str(ptx), job.source], [*host, job.source]):
        tool = run_tool(command, max(1.0, job.timeout - (time.monotonic() - started)),
                        memory_bytes=job.memory_bytes, cwd=job.work)
        logs.append(f"$ {shown(command)}\n{tool.output}")
        if tool.code != 0:
            return build_failure(job, "\n".join(logs).strip(), started, tool.accident, **details)
    # The case's kernel as this clang resolves the name, where the module's kernels do
    # not hold it as written (kernel_probe.py).
    entries = entry_names(ptx.read_text(errors="replace")) if ptx.is_file() else None
    details.update(compiler_named(
        job, entries, job.timeout - (time.monotonic() - started),
        lambda source, out: [*base, "-S", "-o", str(out), str(source)]))
    return build_success(job, "\n".join(logs).strip(), started, details, ptx, cubin)


register(Frontend("clang", compile=compile_clang, needs=("clang",), reports_resources=True))
