"""The build frontend: the project's own build, run per cell as its users run it.

A maintainer's question is rarely "does this kernel compile" but "does my package build
with toolkit X for arch Y and host compiler Z, and what does it ship". So the cell runs
the project's own commands (``cmake``, ``pip wheel .``, ``python setup.py build_ext``) in
a fresh copy of the project, with the cell's toolkit, arch and host compiler given the
ways build systems read them:

- toolkit: ``CUDA_HOME``/``CUDA_PATH``/``CUDAToolkit_ROOT`` (a classic install's layout),
  its ``bin`` first on ``PATH``, ``CUDACXX``;
- arch: ``CUDAARCHS`` (CMake), ``TORCH_CUDA_ARCH_LIST`` (PyTorch), and the placeholders
  ``{cuda_arch}`` (``90a``), ``{torch_arch}`` (``9.0a``), ``{gencode}`` and ``{arch}`` in
  the commands; a build that ignores them shows it in what it ships;
- host compiler: ``CC``, ``CXX``, ``CUDAHOSTCXX`` (and nvcc's ``NVCC_CCBIN``).

Steps (run by the loop of stages/runtime/pipeline.py): ``compile`` is the build (every
command, in order, the first that fails decides); ``inspect`` audits what it made (every
ELF in the output files and wheels: SASS and PTX per module, and whether each module with
kernels can run on the cell's arch); on a GPU ``load`` hands each module's fatbinary to
the driver and ``run`` runs the case's test command.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...common.confined import inside
from ...common.versions import Arch, sass_runs_on
from ...errors import Failure, UserError
from ..binaries.elf import UnreadableFile, fatbins
from ..binaries.facts import Module, read_modules, runs_on
from ..binaries.inputs import members, unreadable
from ..cell.cell_environment import CellEnvironment, cell_environment
from ..cell.files import BUILD_SOURCE, COMPILE_RECORD
from ..cell.job import Job
from ..cell.result import StageResult
from ..cell.steps import Carried, Step
from ..compile.logs import (
    cuobjdump_resource_usage,
    decisive_line,
    error_lines,
    warning_lines,
)
from ..inspect.budgets import judge_budget, with_ptxas_figures
from ..inspect.kernel_names import cpp_names
from ..process.limits import decode, run_tool

# What a build command may name; every other {name} is left for the shell-free command.
BUILD_PLACEHOLDERS = ("arch", "cuda_arch", "torch_arch", "gencode", "python", "cuda_home",
                      "nvcc", "cxx", "case")


def arch_values(arch: str) -> dict[str, str]:
    """The cell's arch as each build system spells it."""
    parsed = Arch.parse(arch)
    cap = f"{parsed.capability // 10}.{parsed.capability % 10}{parsed.suffix}"
    return {"arch": parsed.name, "cuda_arch": f"{parsed.capability}{parsed.suffix}",
            "torch_arch": cap,
            "gencode": f"-gencode=arch={parsed.compute},code={parsed.name}"}


def build_environment(job: Job) -> CellEnvironment:
    """The process environment of every build and test command of the cell: the cell
    environment (no credential of the run's), with the cell's toolkit, arch, host
    compiler and search paths, and the case's own variables."""
    setting = job.build_setting  # none for a prebuilt cell's test on a GPU machine
    env: dict[str, str] = cell_environment()
    cuda_home = setting.cuda_home if setting else ""
    path = [f"{cuda_home}/bin" if cuda_home else "", *(setting.tools_bin if setting else ()),
            env.get("PATH", "")]
    libraries = [d for d in (job.env.library_dirs if job.env else ()) if d]
    env.update(PATH=os.pathsep.join(p for p in path if p),
               LIBRARY_PATH=os.pathsep.join([*libraries, env.get("LIBRARY_PATH", "")]).strip(":"),
               LD_LIBRARY_PATH=os.pathsep.join(
                   [*libraries, env.get("LD_LIBRARY_PATH", "")]).strip(":"))
    # The build's own tools, and the cell's library where it is a Python package installed
    # for the cell (a torch wheel from PyPI that a setup.py's BuildExtension imports).
    python_path = [*(setting.tools_path if setting else ()),
                   *(job.library.python_path if job.library else ())]
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join([*python_path, env.get("PYTHONPATH", "")]).strip(
            os.pathsep)
    host = job.host_compiler_path or (job.env.host_compiler if job.env else None)
    env.update(cell_variables(job.arch, cuda_home, host))
    env.update({name: fill(value, job) for name, value in (job.build.env if job.build else ())})
    return cell_environment(env)


def cell_variables(arch: str, cuda_home: str, host: str | None) -> dict[str, str]:
    """What a build is told of its cell besides the folders on its search paths: the
    toolkit, the arch and the host compiler as build systems read them. One function, so
    `cudamatrix repro` sets for a rebuild what the run set (from the cell, never a
    record's environment)."""
    values = arch_values(arch)
    variables = {"CUDAARCHS": values["cuda_arch"], "TORCH_CUDA_ARCH_LIST": values["torch_arch"],
                 "CUDAMATRIX_ARCH": values["arch"], "CUDAMATRIX_GENCODE": values["gencode"]}
    if cuda_home:
        variables.update(CUDA_HOME=cuda_home, CUDA_PATH=cuda_home, CUDAToolkit_ROOT=cuda_home,
                         CUDACXX=f"{cuda_home}/bin/nvcc")
    if host:
        c_compiler = host.replace("clang++", "clang").replace("g++", "gcc")
        variables.update(CC=c_compiler, CXX=host, CUDAHOSTCXX=host, NVCC_CCBIN=host)
    return variables


def set_for_build(env: dict[str, str]) -> dict[str, str]:
    """What a build's environment holds that this process's does not: the variables the
    tool set (its repro exports them)."""
    return {name: value for name, value in env.items() if os.environ.get(name) != value}


def fill(text: str, job: Job) -> str:
    """`text` with the cell's {placeholders} filled in."""
    return fill_with(text, placeholder_values(job))


def fill_with(text: str, values: Mapping[str, str]) -> str:
    """`text` with each {name} of `values` filled in."""
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def command_words(command: str, job: Job) -> list[str]:
    """One build command as words, its placeholders filled in (no shell: a pipe or a
    redirection is written ``bash -c '...'``, as the case's author chooses)."""
    return [fill(word, job) for word in shlex.split(command)]


def placeholder_values(job: Job) -> dict[str, str]:
    return placeholders(job.arch, job.build_setting.cuda_home if job.build_setting else "",
                        job.source,
                        job.host_compiler_path or (job.env.host_compiler if job.env else None))


def placeholders(arch: str, cuda_home: str, case: str, host: str | None) -> dict[str, str]:
    """Each placeholder's value for a cell: its arch, toolkit, case folder (a test script
    beside case.toml) and host compiler; `cudamatrix repro` fills a rebuild's so."""
    return {**arch_values(arch), "python": sys.executable, "cuda_home": cuda_home,
            "case": case, "nvcc": f"{cuda_home}/bin/nvcc" if cuda_home else "nvcc",
            "cxx": host or "g++"}


# Lines a build system prints around the real error: its own frame, not the finding.
_WRAPPER = re.compile(r"^(CMake Error|g?make(\[\d+\])?:|ninja: build stopped|collect2: error"
                      r"|error: subprocess-exited|ERROR: Failed|× |error: command .* failed"
                      r"|subprocess\.CalledProcessError|# --error"
                      r"|.*finished with status 'error'|note: This error originates)")
# The linker's own complaints carry no "error" word: "ld: cannot find -lcudart".
_LINKER = re.compile(r"^\S*\bld(\.\w+)?: ")
_MISSING_LIBRARY = re.compile(r"cannot find -l([\w.+-]+)")
# A pattern of `outputs` that is a glob (it may catch files the case did not mean).
_GLOB = re.compile(r"[*?[]")


def failure_line(log: str) -> str:
    """The build's decisive error: the first error a compiler or linker printed, not the
    build system's frame around it (``CMake Error at ...``, ``gmake: *** ...``); a CMake
    error of its own is the message under its frame."""
    lines = [ln.strip() for ln in log.splitlines()]
    errors = set(error_lines(log))
    decisive = [ln for ln in lines if (ln in errors or _LINKER.match(ln))
                and not _WRAPPER.match(ln)]
    if decisive:
        return decisive[0][:500]
    for number, line in enumerate(lines):
        if line.startswith("CMake Error"):
            message = next((ln for ln in lines[number + 1:] if ln), "")
            return f"{line} {message}"[:500]
    return decisive_line(log)


def missing_library(log: str, job: Job) -> str | None:
    """Why the link failed when the library it could not find is one the toolkit's own
    packages lack (the 11.x/12.x wheels ship no static cudart): the toolkit's gap, a skip,
    not the project's failure."""
    found = _MISSING_LIBRARY.search(failure_line(log))
    if found is None or job.env is None:
        return None
    name = found.group(1)
    folders = [Path(d) for d in job.env.library_dirs]
    if any(any(f.glob(f"lib{name}.*")) for f in folders):
        return None
    if name not in ("cudart_static", "cudadevrt", "cudart", "culibos"):
        return None
    return (f"toolkit {job.env.toolkit} ({job.env.provider}) ships no lib{name}: the build "
            f"links it ({found.group(0)}); NVIDIA's images or a host install carry it")


def _run_commands(commands: list[str], job: Job, env: CellEnvironment, cwd: Path,
                  started: float) -> tuple[int, str, str | None]:
    """Every command in order; the status, the whole log and an accident (a signal)."""
    logs: list[str] = []
    for command in commands:
        words = command_words(command, job)
        remaining = max(1.0, job.timeout - (time.monotonic() - started))
        try:
            tool = run_tool(words, remaining, memory_bytes=job.memory_bytes, env=env, cwd=cwd)
        except subprocess.TimeoutExpired as stopped:  # the commands before it are its story
            stopped.output = "\n".join([*logs, str(stopped.output or "")])
            raise
        # As it ran: every placeholder filled in (a repro, or a person, runs it so).
        logs.append(f"$ {shlex.join(words)}\n{tool.output}".strip())
        if tool.code != 0:
            return tool.code, "\n".join(logs), tool.accident
    return 0, "\n".join(logs), None


def _outputs(root: Path, patterns: list[str]) -> list[Path]:
    found: dict[Path, None] = {}
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            if path.is_file() and inside(path, [root]):
                found[path] = None
    return list(found)


def build(job: Job) -> StageResult:
    """The compile stage: the project copied, its commands run, its outputs found."""
    started = time.monotonic()
    source = job.work / BUILD_SOURCE
    shutil.rmtree(source, ignore_errors=True)
    spec, setting = job.build, job.build_setting
    assert spec is not None and setting is not None  # prepare_build gave a built cell both
    shutil.copytree(setting.project, source, symlinks=True,
                    ignore=shutil.ignore_patterns(".git"))
    env = build_environment(job)
    code, log, accident = _run_commands(list(spec.commands), job, env, source, started)
    details: dict[str, Any] = {"project": setting.project_label,
                               "commands": list(spec.commands),
                               # What `cudamatrix repro` rebuilds it from: the project's
                               # folder, each command's words, what the tool set.
                               "project_path": setting.project,
                               "command_words": [command_words(c, job) for c in spec.commands],
                               "environment": set_for_build(env)}
    if code != 0:
        if accident:
            return StageResult("compile", "error", accident, log, time.monotonic() - started,
                               details, accident=accident)
        lacking = missing_library(log, job)
        return StageResult("compile", "unavailable" if lacking else "failed",
                           lacking or failure_line(log), log, time.monotonic() - started,
                           details)
    outputs = _outputs(source, list(spec.outputs))
    details["outputs"] = [str(p.relative_to(source)) for p in outputs]
    details["warnings"] = warning_lines(log)
    if not outputs:
        wanted = ", ".join(spec.outputs)
        return StageResult("compile", "failed", f"the build made no file matching {wanted}",
                           log, time.monotonic() - started, details)
    return StageResult("compile", "ok", "", log, time.monotonic() - started, details)


def _module_summary(module: Module, member: str, gpu: Arch) -> dict[str, Any]:
    kernels = sum(i.kernels for i in module.images)
    why = runs_on(module, gpu)
    sass = any(sass_runs_on(Arch.parse(i.arch), gpu) for i in module.sass())
    return {"file": member, "module": module.number, "ships": module.describe(),
            "kernels": kernels, "runs_on_arch": why is None, "why": why or "",
            "via": "sass" if sass else "ptx-jit" if why is None else None}


def _resource_usage(path: Path, label: str, cuobjdump: str, gpu: Arch) -> list[dict[str, Any]]:
    """The figures of each kernel of a built file's SASS for the cell's arch, as
    ``cuobjdump -res-usage`` reads them (registers, stack, shared and local memory)."""
    done = subprocess.run([cuobjdump, "-res-usage", str(path)], capture_output=True,
                          timeout=300, check=False, env=cell_environment())
    records = [r for r in cuobjdump_resource_usage(decode(done.stdout)) if r["arch"] == gpu.name]
    names = cpp_names([r["kernel"] for r in records])
    return [{**r, "name": name, "file": label} for r, name in zip(records, names, strict=True)]


def _caught_by(job: Job, output: Path) -> str | None:
    """The glob of the case's `outputs` that caught `output`, or None where the case names
    it (or the frontend made it: a torch extension's library)."""
    if job.build is None:
        return None
    root = job.work / BUILD_SOURCE
    try:  # which of the case's words named it, not whether it may be read
        relative = output.relative_to(root)
    except ValueError:
        return None
    if any(Path(p) == relative for p in job.build.outputs if not _GLOB.search(p)):
        return None
    return next((p for p in job.build.outputs if _GLOB.search(p) and output in root.glob(p)),
                None)


def _shown(output: Path, root: Path) -> str:
    """A build output as a message names it: from the project's root, else by its name."""
    try:
        return str(output.relative_to(root))
    except ValueError:
        return output.name


def _no_elf(job: Job, outputs: list[Path]) -> tuple[list[Path], list[str], str]:
    """The outputs a library can be read from; a note for each file a glob caught that is
    none (`outputs = ["*"]` catches case.toml: skipped, said); and the one line naming a
    file the case named that is none (a linker script named `.so`), which fails the
    stage. Each such file crashed the cell's worker at inspect."""
    readable, notes = [], []
    root = job.work / BUILD_SOURCE
    for output in outputs:
        why = unreadable(output)
        if why is None:
            readable.append(output)
            continue
        label = _shown(output, root)
        caught = _caught_by(job, output)
        if caught is None:
            return [], [], f"{label}: {why}"
        notes.append(f"skipped {label} (caught by {caught!r}): {why}")
    return readable, notes, ""


def audit_outputs(job: Job, outputs: list[Path], ptxas: Sequence[Mapping[str, Any]] = ()
                  ) -> tuple[StageResult, list[bytes]]:
    """The inspect stage: what each output ships, per module, for the cell's arch; and
    the modules' fatbinaries, for the driver on a GPU. `ptxas`: the figures ptxas printed
    while they were compiled (-v), for the spills no cubin records."""
    started = time.monotonic()
    outputs, skipped, refused = _no_elf(job, outputs)
    if refused:
        return StageResult("inspect", "error", f"cannot read the build's outputs: {refused}",
                           refused, time.monotonic() - started), []
    cuobjdump = job.cuobjdump
    if not cuobjdump:
        return StageResult("inspect", "unavailable", "no cuobjdump to read the build's "
                           "device code"), []
    gpu = Arch.parse(job.arch)
    summaries: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    fatbinaries: list[bytes] = []
    with tempfile.TemporaryDirectory(dir=job.work, prefix="audit-") as scratch:
        try:
            for output in outputs:
                for member in members(output, Path(scratch)):
                    label = f"{output.name}:{member.name}" if member.name != output.name \
                        else output.name
                    if member.problem:
                        raise UnreadableFile(f"{label}: {member.problem}")
                    modules = read_modules(member.path, label, cuobjdump)
                    summaries += [_module_summary(m, label, gpu) for m in modules]
                    if any(i.kernels for m in modules for i in m.images):
                        resources += _resource_usage(member.path, label, cuobjdump, gpu)
                    with member.path.open("rb") as handle:
                        for fatbin in fatbins(handle):
                            handle.seek(fatbin.offset)
                            fatbinaries.append(handle.read(fatbin.size))
        except (UnreadableFile, UserError, OSError, subprocess.SubprocessError) as exc:
            return StageResult("inspect", "error", f"cannot read the build's outputs: {exc}",
                               seconds=time.monotonic() - started), []
    with_kernels = [s for s in summaries if s["kernels"]]
    said_by = f"cuobjdump -res-usage, {gpu.name}"
    if ptxas:
        resources = with_ptxas_figures(resources, ptxas)
        said_by = f"cuobjdump -res-usage and ptxas -v, {gpu.name}"
    details: dict[str, Any] = {"modules": summaries, "resources": resources}
    lines = [*skipped, *(f"{s['file']} module {s['module']}: {s['ships']}" for s in summaries)]
    if not with_kernels:
        return StageResult("inspect", "ok", "the build ships no kernels", "\n".join(lines),
                           time.monotonic() - started, details), fatbinaries
    wrong = [s for s in with_kernels if not s["runs_on_arch"]]
    if wrong:
        first = wrong[0]
        message = f"{first['file']} module {first['module']}: {first['why']}"
        return StageResult("inspect", "failed", message, "\n".join(lines),
                           time.monotonic() - started, details), fatbinaries
    if job.resources is not None:
        judged = judge_budget(job.resources, resources, said_by)
        if isinstance(judged, Failure):
            return StageResult("inspect", "error", judged.reason,
                               "\n".join([*lines, judged.reason]),
                               time.monotonic() - started, details), fatbinaries
        lines += judged.lines
        if judged.broken:
            return StageResult("inspect", "failed", judged.broken[0], "\n".join(lines),
                               time.monotonic() - started, details), fatbinaries
    # Runs, but not as asked: no SASS for the arch, so the driver JIT-compiles the PTX at
    # first load (a build that ignored the arch it was given shows here).
    jit = [s for s in with_kernels if s["via"] == "ptx-jit"]
    message = (f"no SASS for {gpu.name} in {jit[0]['file']}: it runs through the driver's "
               f"PTX JIT (ships {jit[0]['ships']})") if jit else ""
    return StageResult("inspect", "ok", message, "\n".join(lines), time.monotonic() - started,
                       details), fatbinaries


def _load(fatbinaries: list[bytes]) -> StageResult:
    """Every module through the driver, as the library's first call would load it."""
    started = time.monotonic()
    from ..binaries.measure import DriverLoader

    try:
        loader = DriverLoader()
    except (ImportError, RuntimeError) as exc:
        return StageResult("load", "error", f"no driver to load with: {exc}")
    said = [loader.load(f) for f in fatbinaries]
    refused = [s for s in said if s != "loads"]
    details = {"modules": len(said), "refused": refused}
    if refused:
        return StageResult("load", "failed", f"the driver refused {len(refused)} of "
                           f"{len(said)} modules: {refused[0]}", seconds=time.monotonic() - started,
                           details=details)
    return StageResult("load", "ok", "", seconds=time.monotonic() - started, details=details)


def _test(job: Job, env: CellEnvironment, source: Path) -> StageResult:
    started = time.monotonic()
    code, log, accident = _run_commands([str(job.build.test if job.build else "")], job, env,
                                        source, started)
    if code != 0:
        return StageResult("run", "error" if accident else "failed",
                           accident or failure_line(log), log, time.monotonic() - started)
    return StageResult("run", "ok", "", log, time.monotonic() - started)


def build_steps(job: Job) -> list[Step]:
    """A build cell's steps: the build (or, prebuilt, its record: the pipeline takes it),
    the audit of what it made, each module through the driver, the case's test."""
    audit = _Audit(job)
    return [Step("compile", audit.build, measured=True), Step("inspect", audit.inspect),
            Step("load", audit.load, gpu=True), Step("run", audit.test, gpu=True)]


class _Audit:
    """What a build cell's steps hand each other: the modules' fatbinaries, read by the
    audit, for the driver."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.fatbinaries: list[bytes] = []

    def build(self, carried: Carried) -> list[StageResult]:
        """The build, its record kept whatever it said (a prebuilt run replays a failed
        build as it failed)."""
        built = build(self.job)
        (self.job.work / COMPILE_RECORD).write_text(json.dumps(built.to_dict()))
        return [built]

    def inspect(self, carried: Carried) -> list[StageResult]:
        source = self.job.work / BUILD_SOURCE
        built = carried.stages[0]
        inspected, self.fatbinaries = audit_outputs(
            self.job, [source / p for p in built.details["outputs"]])
        return [inspected]

    def load(self, carried: Carried) -> list[StageResult]:
        return [_load(self.fatbinaries)]

    def test(self, carried: Carried) -> list[StageResult]:
        if self.job.build is None or not self.job.build.test:
            return []
        return [_test(self.job, build_environment(self.job), self.job.work / BUILD_SOURCE)]
