"""nvcc: the translation unit compiled as a build compiles it (``nvcc -c``: the device
code for the cell's arch and the host code by the host compiler), its cubin and PTX taken
from nvcc's kept intermediates; or a whole shared library when the case calls a host
entry. A host-only error fails the compile, with the host compiler's own line."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from ...common.versions import Arch
from ...errors import Failure
from ..binaries.elf import UnknownImage, UnreadableFile, prune_fatbins
from ..cell.environment import Environment
from ..cell.files import CUBIN, DEPENDENCIES, LIBRARY, OBJECT, PTX
from ..cell.job import Job
from ..cell.result import TOGETHER_SECONDS, StageResult
from ..compile.arch_guard import (
    SINCE_ARCH,
    host_preprocess_command,
    newer_archs,
    read_preprocessed,
    since_arch,
    toolkit_archs,
    undefined_name,
)
from ..compile.built import Build, build_failure, build_success
from ..compile.flags import include_folders, resolve_flags, shown
from ..compile.kernel_probe import PROBE_PTX, PROBE_SOURCE, compiler_named
from ..compile.logs import PtxasFigures, split_nvcc_trace
from ..compile.nvcc_threads import (
    COMPILE_STRATEGY,
    NVCC_THREADS,
    THREADS_FALLBACK,
    ThreadedOutput,
)
from ..inspect.stage import entry_names
from ..process.limits import ToolRun, memory_limit, run_tool
from .registry import Frontend, Line, register


def _cudart(env: Environment) -> list[str]:
    """How a host build links cudart: statically where the toolkit has the archive (nvcc's
    default), else the shared library by name (the 12.x wheels have only the .so)."""
    static = any((Path(d) / "libcudart_static.a").is_file() for d in env.library_dirs)
    return [] if static else ["-cudart", "none", "-lcudart"]


# The scratch files of the lines that are not the compile, in the cell's folder.
ARCH_GUARD_OUTPUT = "arch-guard.ii"
ARCH_GUARD_OBJECT = "arch-guard.o"


def _shaping(job: Job) -> list[str]:
    """The words that shape what nvcc makes of the unit, the same on every line of the
    cell (compile, probe, preprocessing): the host compiler, the case's flags and
    dialect, the register cap, the library's headers (after the case's own -I)."""
    assert job.env is not None
    host = job.host_compiler_path or job.env.host_compiler  # the case's, or the run's choice
    words = [*(["-ccbin", host] if host else []),
             *resolve_flags(job.flags, job.case_folder, job.env)]
    if job.std is not None:
        words.append(f"-std={job.std}")
    if job.maxrregcount is not None:
        words.append(f"-maxrregcount={job.maxrregcount}")
    return [*words, *(f"-I{d}" for d in (job.library.include_dirs if job.library else ()))]


def _group_archs(job: Job) -> list[str]:
    return [str(m["arch"]) for m in job.group] or [job.arch]


def nvcc_lines(job: Job, line: Line) -> list[list[str]]:
    """Every nvcc line of a cell, one maker (Frontend.command_lines): the shaping words
    (`_shaping`) on each, then what the purpose itself needs. Left off the lines that are
    not the compile, as they make no sense there: -Xptxas -v (no ptxas runs under -ptx
    or -E), --keep and -MD (the compile's intermediates and its list of read files, which
    a probe's would overwrite), --threads and the -gencode list (one virtual arch). The
    repro line is the compile's less --keep-dir (a folder of the cell's, gone when it
    ends); a group's (job.group) builds each member's arch, with nvcc's -v trace."""
    assert job.env is not None and job.env.nvcc is not None
    nvcc, shaping, work = job.env.nvcc, _shaping(job), job.work
    arch = line.arch or job.arch
    if line.purpose in ("compile", "repro"):
        grouped = bool(job.group)
        output = library_output(job, work / LIBRARY) if job.host_entry \
            else ["-c", "-o", str(work / OBJECT)]
        keep = ["--keep", "--keep-dir", str(work / "keep")] if line.purpose == "compile" \
            else []
        # nvcc's own list of every file it read (-MD), for the compile cache to check its
        # key against (compile_inputs.py).
        return [[nvcc, *shaping, *output, *(["-v"] if grouped else []), "-Xptxas", "-v",
                 *keep, "-MD", "-MF", str(work / DEPENDENCIES),
                 *(["--threads", str(line.threads)] if line.threads > 1 else []),
                 *([gencode(a) for a in _group_archs(job)] if job.arch_flag else []),
                 job.source]]
    if line.purpose == "probe":
        virtual = [f"--gpu-architecture={Arch.parse(arch).compute}"] if job.arch_flag else []
        return [[nvcc, *shaping, "-ptx", *virtual, "-o", str(work / PROBE_PTX),
                 str(work / PROBE_SOURCE)]]
    if line.purpose == "preprocess":
        # One virtual arch: nvcc -E then preprocesses the device side, __CUDA_ARCH__ set.
        return [[nvcc, *shaping, "-E", f"--gpu-architecture={arch}", job.source, "-o",
                 str(work / ARCH_GUARD_OUTPUT)]]
    # The host pass's own preprocessing, as nvcc would run it for `arch` (--dryrun).
    return [[nvcc, *shaping, "--dryrun", "-c", f"--gpu-architecture={arch}", job.source,
             "-o", str(work / ARCH_GUARD_OBJECT)]]


def _line(job: Job, line: Line) -> list[str]:
    return nvcc_lines(job, line)[0]


def named_by_nvcc(job: Job, ptx: Path, timeout: float) -> dict[str, object]:
    """The case's kernel as this nvcc resolves the name (kernel_probe.py), where the built
    module's kernels do not hold it as written."""
    entries = entry_names(ptx.read_text(errors="replace")) if ptx.is_file() else None
    return compiler_named(job, entries, timeout, _line(job, Line("probe")))


def read_outside(job: Job, listing: Path | None = None) -> tuple[str, ...]:
    """The files nvcc said it read (its -MD list) that neither the toolkit, the library, the
    host compiler's system folders nor the case's folder stand for: what the compile key
    must cover by their bytes (compile_cache.py checks, and keeps no compile it missed)."""
    path = listing or job.work / DEPENDENCIES
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ()
    assert job.env is not None
    stood_for = [job.env.root, *(job.library.include_dirs if job.library else ()),
                 job.case_folder, str(Path(job.source).parent), "/usr/", "/lib/", "/opt/"]
    found = []
    for word in text.replace("\\\n", " ").split()[1:]:
        if word.endswith(":"):
            continue
        real = os.path.realpath(os.path.join(job.work, word))
        if not any(real == f.rstrip("/") or real.startswith(f.rstrip("/") + "/")
                   for f in map(os.path.realpath, stood_for)):
            found.append(real)
    return tuple(sorted(set(found))[:200])


def since_arch_found(job: Job, log: str, deadline: float) -> dict[str, object]:
    """Where a failed compile says a name is undefined (or has no matching overload) for
    the cell's arch: the lowest newer arch this nvcc knows whose device preprocessing of
    the same unit (same flags, includes and host compiler) declares it, and the header's
    guard (arch_guard.py), as the `since_arch` detail; nothing for any other failure, or
    where the case's own flags name the archs. No preprocess starts past `deadline` (the
    monotonic end of the cell's time limit)."""
    assert job.env is not None and job.env.nvcc is not None
    name = undefined_name(log)
    if name is None or not job.arch_flag:
        return {}
    newer = newer_archs(job.arch, toolkit_archs(job.env.nvcc, deadline - time.monotonic()))
    output = job.work / ARCH_GUARD_OUTPUT

    def preprocess(arch: str, left: float) -> str | None:
        command = _line(job, Line("preprocess", arch=arch))
        try:
            done = run_tool(command, left, memory_bytes=job.memory_bytes, cwd=job.work)
            return read_preprocessed(output) if done.code == 0 and not done.accident else None
        except (subprocess.TimeoutExpired, OSError):
            return None
        finally:
            output.unlink(missing_ok=True)

    def host_pass(arch: str, left: float) -> str | None:
        dry = _line(job, Line("host_pass", arch=arch))
        try:
            said = run_tool(dry, left, cwd=job.work)
            command = host_preprocess_command(said.output, output)
            if command is None:
                return None
            done = run_tool(command, max(1.0, deadline - time.monotonic()),
                            memory_bytes=job.memory_bytes, cwd=job.work)
            return read_preprocessed(output) if done.code == 0 else None
        except (subprocess.TimeoutExpired, OSError):
            return None
        finally:
            output.unlink(missing_ok=True)

    # The headers a line marker may name: the case's, the toolkit's, the include folders'.
    readable = [job.case_folder, str(Path(job.source).parent), job.env.root,
                *job.env.include_dirs, *(job.library.include_dirs if job.library else ()),
                *include_folders(job.flags, job.case_folder, job.env)]
    # The search reads in this worker's own memory: under the cell's limit, as its tools.
    try:
        with memory_limit(job.memory_bytes):
            return {SINCE_ARCH: since_arch(name, job.arch, newer, preprocess, deadline,
                                           job.work, host_pass, readable).to_dict()}
    except MemoryError:
        return {}


def gencode(arch: str) -> str:
    """The -gencode flag for SASS of `arch` (no PTX in the binary: the cell's arch only)."""
    parsed = Arch.parse(arch)
    return f"-gencode=arch={parsed.compute},code={parsed.name}"


def library_output(job: Job, library: Path) -> list[str]:
    """nvcc's options for a host-entry case's shared library (the wheel toolkits keep
    libcudart_static.a where nvcc.profile does not look)."""
    assert job.env is not None
    return ["-shared", "-Xcompiler", "-fPIC", "-o", str(library),
            *(f"-L{d}" for d in job.env.library_dirs), *_cudart(job.env)]


def kept_file(keep: Path, source: str, suffix: str, arch: str | None = None) -> Path | None:
    """The source's own intermediate in nvcc's keep folder (``k.ptx``, or ``k.compute_90a.ptx``
    when one nvcc built several archs), never the device link's (``libcase_dlink.cubin``,
    which sorts first for a source named after it)."""
    stem = Path(source).stem
    if arch is None:
        names = [f"{stem}{suffix}"]
    else:
        parsed = Arch.parse(arch)
        names = [f"{stem}.{parsed.compute}{suffix}", f"{stem}.{parsed.name}{suffix}"]
    found = next((keep / n for n in names if (keep / n).is_file()), None)
    if found is None and arch is None:  # the case's own flags named the archs
        found = next((p for p in sorted(keep.glob(f"*{suffix}")) if "_dlink." not in p.name),
                     None)
    return found


def _compile_line(job: Job, threads: int = 1) -> tuple[list[str], str]:
    """The nvcc line that builds the cell (or its group), and its repro line as the log
    shows it. A host-entry case is built whole, as a shared library the run stage calls;
    any other as an object, host code and all (what CMake and setuptools run); the PTX and
    cubin come out of the kept intermediate files either way. nvcc by its full path reads
    the nvcc.profile beside it, as here."""
    return _line(job, Line("compile", threads=threads)), \
        shown(_line(job, Line("repro", threads=threads)))


def compile_nvcc(job: Job) -> Build:
    started = time.monotonic()
    assert job.env is not None and job.env.nvcc is not None
    keep = job.work / "keep"
    keep.mkdir(parents=True, exist_ok=True)
    cubin = job.work / CUBIN
    library = job.work / LIBRARY
    command, logged = _compile_line(job)
    figures = PtxasFigures()
    try:
        tool = run_tool(command, job.timeout, memory_bytes=job.memory_bytes, cwd=job.work,
                        reader=figures)
    except subprocess.TimeoutExpired:
        shutil.rmtree(keep, ignore_errors=True)
        raise
    full_log = f"$ {logged}\n{tool.output}".strip()
    details: dict[str, object] = {"nvcc": job.env.tool_versions.get("nvcc", "unknown")}
    if tool.code != 0:
        shutil.rmtree(keep, ignore_errors=True)  # intermediates of a failed build are large
        if not tool.accident:
            details.update(since_arch_found(job, tool.output, started + job.timeout))
        return build_failure(job, full_log, started, tool.accident, **details)
    ptx = job.work / PTX
    for suffix, target in ((".ptx", ptx), (".cubin", cubin)):
        found = kept_file(keep, job.source, suffix)
        if found is not None and not target.exists():
            target.write_bytes(found.read_bytes())
    shutil.rmtree(keep, ignore_errors=True)
    details.update(named_by_nvcc(job, ptx, job.timeout - (time.monotonic() - started)))
    # The cell's arch's figures; where the case's own flags chose the archs, what ptxas
    # printed last for each kernel, as a log of archs nobody asked for gives.
    own = figures.for_arch(job.arch) or figures.merged()
    return build_success(job, full_log, started, details, ptx if ptx.exists() else None,
                     cubin if cubin.exists() else None,
                     library if job.host_entry and library.exists() else None,
                     read_outside=read_outside(job),
                     reported=(own, figures.missing(job.arch)))


def compile_together(job: Job) -> list[StageResult]:
    """The cells of `job.group` (one case, variant, toolkit, library and host compiler;
    only the arch differs) built by one nvcc with a -gencode per arch, as a real build
    makes them: the host pass (preprocessing, cudafe++, the host compiler: most of a
    CUTLASS build) runs once, not once per arch. Each cell then gets what a build for its
    arch alone gives: its PTX and cubin from nvcc's kept intermediates, its shared library
    with only its arch's images (audit.elf.prune_fatbins), its part of the log read off
    nvcc's own trace (-v), so its warnings and ptxas figures are its arch's alone.

    One compile stage per cell, in `job.group`'s order. When nvcc fails, the step it
    failed in decides: one of an arch's own (its preprocessing, cicc, ptxas) fails that
    arch's cell, with its part of the log, and the others are `skipped` (the run builds
    them again, without it); a step every arch shares (the host pass, the link: a build
    for any one arch runs it on the same source) fails every cell. Or one stage saying why
    the build cannot stand for each cell alone (a signal or the memory limit; nvcc spoke
    outside its steps; an image nobody asked for): the run then builds each cell by
    itself, as before. The shared build never decides a verdict it could not split."""
    started = time.monotonic()
    assert job.env is not None
    members = [replace(job, cell_id=m["cell_id"], arch=m["arch"], workdir=m["workdir"],
                       group=()) for m in job.group]
    archs = [m.arch for m in members]
    keep = job.work / "keep"
    shutil.rmtree(keep, ignore_errors=True)
    keep.mkdir(parents=True)
    library = job.work / LIBRARY
    together = f"one nvcc for {', '.join(archs)}"
    how: dict[str, object] = {COMPILE_STRATEGY: "grouped"}
    try:
        threaded = _threaded(job, archs) if job.threads > 1 else None
        if isinstance(threaded, _Threaded):
            tool, logged, (parts, figures), last = threaded.tool, threaded.logged, \
                threaded.split, None
            how = {COMPILE_STRATEGY: "threads", NVCC_THREADS: job.threads}
            together += f" (--threads {job.threads})"
        else:
            if threaded is not None:  # its output cannot say each arch's part: again, serially
                how[THREADS_FALLBACK] = f"--threads {job.threads}: {threaded.reason}"
                shutil.rmtree(keep, ignore_errors=True)
                keep.mkdir(parents=True)
            command, logged = _compile_line(job)
            # Each arch's figures, off the whole output: a cut log cannot split them.
            figures = PtxasFigures()
            tool = run_tool(command, max(1.0, job.timeout - (time.monotonic() - started)),
                            memory_bytes=job.memory_bytes, cwd=job.work, reader=figures)
            split = split_nvcc_trace(tool.output, archs) if not tool.accident \
                else Failure(f"{tool.accident}")
            if isinstance(split, Failure):
                return [_apart(f"{together}: {split.reason}", tool.output, started)]
            parts, last = split

        def log(member: Job) -> str:
            return (f"$ {logged}\n# {together}: what {member.arch}'s steps and the shared "
                    f"ones printed\n{parts[member.arch]}").strip()

        stages = []
        if tool.code != 0:
            for member in members:
                if last in (None, member.arch):
                    # An arch's own step failed: where a name is undefined for it, since
                    # which arch it is declared (a shared step's failure is no arch's).
                    facts = {**_facts(member), **(since_arch_found(
                        member, parts[member.arch], started + job.timeout)
                        if last == member.arch else {})}
                    stages.append(build_failure(member, log(member), started, None,
                                                **facts).result)
                else:
                    stages.append(StageResult("compile", "skipped", f"{together} stopped at "
                                              f"{last}'s step: built again without it"))
        else:
            images = _cubins_by_arch(keep, archs)
            for member in members:
                built = _member_build(member, keep, library, images, log(member), started,
                                      figures)
                if isinstance(built, Failure):
                    return [_apart(f"{together}: {built.reason}", tool.output, started)]
                stages.append(built)
        # Each cell's stage takes its share (the run's cost model, the compile-seconds
        # chart add them up); the whole nvcc's time is said beside it.
        whole = time.monotonic() - started
        return [s if s.status == "skipped" else
                replace(s, seconds=whole / len(members), built_with=tuple(archs),
                        details={**s.details, TOGETHER_SECONDS: round(whole, 2), **how})
                for s in stages]
    finally:
        shutil.rmtree(keep, ignore_errors=True)


class _Threaded(NamedTuple):
    """A group built by one nvcc with its archs side by side: its run, its logged command
    line, each arch's part of the output and ptxas's figures."""

    tool: ToolRun
    logged: str
    split: tuple[dict[str, str], PtxasFigures]


def _threaded(job: Job, archs: list[str]) -> _Threaded | Failure:
    """The group's archs built side by side by one nvcc (--threads, job.threads), or why
    its output cannot say each arch's part (compile.nvcc_threads): the build then runs
    again one arch after another, whose trace says whose each line and failure is."""
    command, logged = _compile_line(job, threads=job.threads)
    reader = ThreadedOutput()
    tool = run_tool(command, job.timeout, memory_bytes=job.memory_bytes, cwd=job.work,
                    reader=reader)
    if tool.accident:
        return Failure(tool.accident)
    if tool.code != 0:
        return Failure(f"nvcc failed (exit status {tool.code}); which arch's step failed "
                       "is told one arch after another")
    split = reader.split(archs)
    return split if isinstance(split, Failure) else _Threaded(tool, logged, split)


def _apart(why: str, output: str, started: float) -> StageResult:
    return StageResult("compile", "failed", f"{why}; each cell is built alone", output[-20_000:],
                       time.monotonic() - started)


def _cubins_by_arch(keep: Path, archs: list[str]) -> dict[bytes, str]:
    """Every cubin nvcc kept (the source's and the device link's), by the arch its name
    says (``k.compute_90a.cubin``, ``libcase_dlink.compute_90a.cubin``)."""
    tags = {}
    for arch in archs:
        parsed = Arch.parse(arch)
        tags[parsed.compute] = tags[parsed.name] = arch
    found: dict[bytes, str] = {}
    for path in keep.glob("*.cubin"):
        tag = path.name.removesuffix(".cubin").rpartition(".")[2]
        if tag in tags:
            found[path.read_bytes()] = tags[tag]
    return found


def _facts(member: Job) -> dict[str, object]:
    assert member.env is not None
    return {"nvcc": member.env.tool_versions.get("nvcc", "unknown")}


def _member_build(member: Job, keep: Path, library: Path, images: dict[bytes, str],
                  log: str, started: float, figures: PtxasFigures) -> StageResult | Failure:
    """One cell's compile stage from the shared build, its files in its own folder, its
    figures those ptxas printed for its arch; or why its part cannot be told apart."""
    ptx, cubin = kept_file(keep, member.source, ".ptx", member.arch), \
        kept_file(keep, member.source, ".cubin", member.arch)
    if ptx is None or cubin is None:
        return Failure(f"nvcc kept no PTX or cubin of {Path(member.source).name} for "
                       f"{member.arch}")
    own_ptx, own_cubin = member.work / PTX, member.work / CUBIN
    shutil.copyfile(ptx, own_ptx)
    shutil.copyfile(cubin, own_cubin)
    own_library = None
    if member.host_entry:

        def ours(payload: bytes) -> bool | None:
            arch = images.get(payload) or next(
                (a for image, a in images.items() if payload.startswith(image)
                 and not payload[len(image):].strip(b"\0")), None)
            return None if arch is None else arch == member.arch

        try:
            pruned = prune_fatbins(library.read_bytes(), ours)
        except (UnknownImage, UnreadableFile) as exc:
            return Failure(str(exc))
        own_library = member.work / LIBRARY
        own_library.write_bytes(pruned)
        own_library.chmod(0o755)
    facts = {**_facts(member), **named_by_nvcc(member, own_ptx, member.timeout)}
    return build_success(member, log, started, facts, own_ptx, own_cubin, own_library,
                         read_outside=read_outside(member, keep.parent / DEPENDENCIES),
                         reported=(figures.for_arch(member.arch),
                                   figures.missing(member.arch))).result


register(Frontend("nvcc", compile=compile_nvcc, command_lines=nvcc_lines,
                  compile_together=compile_together,
                  needs=("nvcc",), reports_resources=True))
