"""nvrtc: NVRTC as a library built on it calls it, straight to a cubin for the cell's arch
(CuPy's path); the PTX kept, the case's kernel given as a name expression."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from ...common.versions import Arch
from ..cell.files import CUBIN, PTX
from ..cell.job import Job
from ..compile.arch_guard import SINCE_ARCH, newer_archs, since_arch_compiled, undefined_name
from ..compile.built import Build, build_failure, build_success
from ..compile.flags import resolve_flags, shown
from ..compile.logs import decisive_line
from ..compile.nvrtc import Nvrtc, driver_command
from ..inspect.kernel_names import KERNEL_RECORD, KERNEL_REFUSED, KernelName, demangle, is_mangled
from ..process.limits import memory_limit, run_tool
from .registry import Frontend, Line, register


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
    full_log = "\n".join(part for part in (nvrtc_log, f"$ {shown(command)}", tool.output)
                         if part)
    if tool.code != 0:
        return build_failure(job, full_log, started, tool.accident, **details)
    return build_success(job, full_log, started, details, ptx, cubin)


def nvrtc_options(job: Job) -> list[str]:
    """The options NVRTC compiles `job` with: the case's flags and dialect, the arch (with
    ptxas's figures), the case's `maxrregcount`, and the include folders."""
    assert job.env is not None
    options = resolve_flags(job.flags, job.case_folder, job.env)
    if job.std is not None:
        options.append(f"-std={job.std}")
    if job.arch_flag:
        options += [f"--gpu-architecture={Arch.parse(job.arch).name}", "-Xptxas=-v"]
    if job.maxrregcount is not None:
        options.append(f"--maxrregcount={job.maxrregcount}")
    # NVRTC sees the source as text with a bare name: the case's own headers must be
    # put on its search path, as nvcc would find them beside the file.
    options.append(f"-I{Path(job.source).parent}")
    # A library's headers ahead of the toolkit's: a newer CCCL than the toolkit's own
    # must be the one found.
    for folder in (job.library.include_dirs if job.library else ()) + job.env.include_dirs:
        options.append(f"-I{folder}")
    return options


def since_arch_found(job: Job, nvrtc: Nvrtc, options: list[str], log: str,
                     started: float) -> dict[str, object]:
    """Where NVRTC says a name is undefined (or has no matching overload) for the cell's
    arch: the lowest newer arch this NVRTC lists for which it finds the name, compiling the
    same program with only the arch changed (NVRTC has no preprocessor of its own to ask,
    so no header line: arch_guard.since_arch_compiled), as the `since_arch` detail."""
    assert job.env is not None
    name = undefined_name(log)
    own = f"--gpu-architecture={Arch.parse(job.arch).name}"
    if name is None or not job.arch_flag or own not in options:
        return {}
    source = Path(job.source)
    spent = time.monotonic() - started

    def still(arch: str) -> bool | None:
        asked = [f"--gpu-architecture={arch}" if o == own else o for o in options]
        with memory_limit(job.memory_bytes):
            output = nvrtc.compile(source.read_bytes(), source.name, asked)
        if output.accident:
            return None
        return not output.ok and undefined_name(output.log) == name

    found = since_arch_compiled(name, job.arch, newer_archs(job.arch, job.env.nvrtc_archs),
                                still, started + job.timeout, spent, f"NVRTC {nvrtc.version}")
    return {SINCE_ARCH: found.to_dict()}


def name_expressions(job: Job) -> list[str]:
    """The case's kernel as C++ names it, given to NVRTC to instantiate and lower; a name
    already as the module holds it (mangled) is looked up as it is."""
    return [job.kernel] if job.kernel and not job.host_entry \
        and not is_mangled(job.kernel) else []


def nvrtc_lines(job: Job, line: Line) -> list[list[str]]:
    """The NVRTC driver's line for `job` (the tool's, as its log shows it), for the compile
    and its repro (Frontend.command_lines); NVRTC resolves the kernel's name itself (name
    expressions) and has no preprocessor to ask, so it has no probe nor preprocessing line:
    its since-which-arch search compiles with these same options, the arch changed."""
    assert job.env is not None and job.env.nvrtc is not None
    if line.purpose not in ("compile", "repro"):
        return []
    return [driver_command(job.env.nvrtc, job.source, nvrtc_options(job),
                           name_expressions(job))]


def compile_nvrtc(job: Job) -> Build:
    """NVRTC as a library built on it would call it: straight to a cubin for the cell's real
    arch (CuPy's path), so every option reaches the code generator (``--maxrregcount``,
    ``-Xptxas``) and the resource usage is NVRTC's own; the PTX is kept for inspection."""
    started = time.monotonic()
    assert job.env is not None and job.env.nvrtc is not None
    source = Path(job.source)
    options, expressions = nvrtc_options(job), name_expressions(job)
    nvrtc = Nvrtc(job.env.nvrtc)
    with memory_limit(job.memory_bytes):
        output = nvrtc.compile(source.read_bytes(), source.name, options, expressions)
    details: dict[str, object] = {"nvrtc": nvrtc.version, "options": shlex.join(options)}
    if not output.ok and expressions and not output.accident:
        # Refused with the kernel's name: compiled without it, NVRTC says whether the
        # code or the name is at fault (an overload, a template with no arguments, a
        # name the source lacks); the name's refusal is then the case's error.
        with memory_limit(job.memory_bytes):
            plain = nvrtc.compile(source.read_bytes(), source.name, options)
        if plain.ok:
            details[KERNEL_REFUSED] = decisive_line(output.log)
            output, expressions = plain, []
    elif output.ok and expressions:
        lowered = output.lowered[expressions[0]]
        details[KERNEL_RECORD] = KernelName(expressions[0], lowered, demangle(lowered)).to_dict()
    # The line that compiles it again outside the tool: the NVRTC driver the tool ships,
    # this toolkit's libnvrtc by its path (NVRTC's version, then its own log, follow).
    command = driver_command(job.env.nvrtc, str(source), options, expressions)
    log = f"$ {shown(command, job.env)}\nNVRTC {nvrtc.version}\n{output.log}".strip()
    if not output.ok:
        if not output.accident:
            details.update(since_arch_found(job, nvrtc, options, output.log, started))
        return build_failure(job, log, started, output.accident, **details)
    ptx = job.work / PTX
    ptx.write_bytes(output.ptx)
    if output.cubin:
        cubin = job.work / CUBIN
        cubin.write_bytes(output.cubin)
        return build_success(job, log, started, details, ptx, cubin, figures_from_module=True)
    return _ptxas(job, ptx, started, log, details)


register(Frontend("nvrtc", compile=compile_nvrtc, command_lines=nvrtc_lines, needs=("nvrtc",),
                  guess_s=0.25,
                  reports_resources=True))
