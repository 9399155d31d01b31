"""torch-extension: a project's PyTorch C++/CUDA extension (its ``.cu`` kernels and its
``.cpp`` binding), compiled per cell as ``torch.utils.cpp_extension.CUDAExtension``
compiles it for the cell's torch release (the ``torch`` library axis), then linked,
imported by the torch that is installed and called, where there is one.

Most CUDA libraries (vLLM, torchao, mamba, bitsandbytes) ship their kernels this way, and
their users' builds go through setuptools and cpp_extension, never a bare nvcc line: a
case that typed torch's flags by hand tested another build than theirs. Here the flags
and defines are the release's own (torch_flags.py reads them from its files), Python's
headers are those of the interpreter running the cell (setuptools passes its sysconfig
include; a missing ``Python.h`` is this machine's gap, said as such), or, on the python
axis, a release's from Debian (the job's ``python_headers``), and the case adds
only what its project's setup.py adds (the variant's ``flags`` for nvcc, its
``options.cxx_flags`` for the host compiler).

Stages: ``compile`` (each file to an object: nvcc for ``.cu`` with the cell's arch, the
host compiler for ``.cpp``; then the link, where the torch holds its libraries: a wheel's
headers alone stop at the objects, said); ``inspect`` (what the objects or the library
ship for the arch, with cuobjdump, and [variant.resources]); on a GPU ``load`` (the
library imported by that torch, in a process of its own) and ``run`` (the case's
``call`` with its ``args``, compared with its ``expect``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...common.confined import FLAGS, PATHS, case_path
from ...common.versions import Arch
from ..cell.cell_environment import cell_environment
from ..cell.environment import PythonHeaders
from ..cell.job import Job
from ..cell.result import StageResult
from ..cell.sequence import stops
from ..cell.steps import Carried, Step
from ..compile.flags import resolve_flags, shown
from ..compile.logs import PtxasFigures, decisive_line, warning_lines
from ..process.limits import ToolRun, run_tool
from .registry import Frontend, register
from .torch_flags import TorchFlags, read_flags

NAME = "torch-extension"
OBJECTS = "objects"  # the cell's folder for the objects and the linked library
# The case's [variant.options]: the rest of its sources, the extension's name, the host
# compiler's own flags, and the smoke call the run stage makes (Python expressions, `torch`
# and the imported extension `ext` in scope).
OPTIONS: tuple[tuple[str, Any], ...] = (
    ("sources", []), ("extension", ""), ("cxx_flags", []), ("call", ""), ("args", "()"),
    ("expect", ""), ("rtol", 1e-5), ("atol", 1e-8), ("result", "got"))
_ARCH_FLAGS = ("-gencode", "--generate-code", "-arch", "--gpu-architecture")
# The compile stage's details: what ptxas printed for each kernel of the cell's arch.
PTXAS_FIGURES = "ptxas_resources"


@dataclass(frozen=True)
class Plan:
    """What one cell compiles and links: each file's command, then the link's."""

    compiles: list[tuple[str, list[str]]]  # (file, command)
    link: list[str] | None  # None: no torch libraries here to link against
    library: Path
    objects: list[Path]
    note: str  # why the link is left out, where it is
    facts: dict[str, Any]


def torch_package(job: Job) -> Path:
    """The cell's torch package folder (``.../torch``): the wheel's files the library
    axis extracted, or the installed torch's."""
    assert job.library is not None
    return Path(job.library.root) / "torch"


def extension_name(job: Job) -> str:
    return str(job.options.get("extension") or Path(job.source).stem)


def _listed(job: Job, key: str) -> list[str]:
    value = job.options.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"[variant.options] {key}: expected a list of strings, got "
                         f"{value!r:.60}")
    return value


def python_include() -> Path:
    """Python's headers for the interpreter running the cell, as setuptools finds them."""
    return Path(sysconfig.get_paths()["include"])


def python_headers(job: Job) -> PythonHeaders:
    """The Python headers the cell's binding is built against: those the run prepared for
    its python axis ("3.13"), else the interpreter's running it."""
    return job.python_headers or PythonHeaders.of_this_interpreter()


def built_for(library: Path) -> str | None:
    """The Python a CPython extension's file name says it was built for (``3.13`` of
    ``.cpython-313-x86_64-linux-gnu.so``), or None where it says none."""
    found = re.search(r"\.cpython-3(\d+)[^.]*\.so$", library.name)
    return f"3.{found.group(1)}" if found else None


def installed_pybind11(package: Path, names: tuple[str, ...]) -> dict[str, str] | None:
    """The pybind11 ABI names' values of a torch that imports here (torch._C has them);
    None for a wheel's headers, which hold no compiled torch."""
    if not names or not (package / "lib").is_dir():
        return None
    script = ("import json, torch; print(json.dumps({n: getattr(torch._C, '_PYBIND11_' + n, "
              f"None) for n in {list(names)!r}}}))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False,
                          env=cell_environment({"PYTHONPATH": str(package.parent)}))
    if done.returncode != 0:
        return None
    values = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: str(v) for k, v in values.items() if v is not None}


def build_plan(job: Job, flags: TorchFlags) -> Plan:
    """Every command of the cell's build, as CUDAExtension's build_ext runs them."""
    assert job.env is not None and job.env.nvcc is not None and job.library is not None
    package = torch_package(job)
    name = extension_name(job)
    host = job.host_compiler_path or job.env.host_compiler or "g++"
    pybind11 = installed_pybind11(package, flags.pybind11_names)
    defines = flags.defines_for(name, pybind11)
    python = python_headers(job)
    includes = [f"-I{d}" for d in (*job.library.include_dirs, *job.env.include_dirs,
                                   *python.include_dirs)]
    nvcc_own = resolve_flags(job.flags, job.case_folder, job.env)
    cxx_own = resolve_flags(_listed(job, "cxx_flags"), job.case_folder, job.env)
    arch = [] if not job.arch_flag or any(f.startswith(_ARCH_FLAGS) for f in nvcc_own) else [
        f"-gencode=arch={Arch.parse(job.arch).compute},code={Arch.parse(job.arch).name}"]
    # setuptools compiles a .cpp with the interpreter's own C flags (sysconfig's CFLAGS and
    # CCSHARED), then the extension's; another Python's headers get this one's flags (its
    # own are in its stdlib's sysconfig, not in the headers' package).
    python_cflags = shlex.split(str(sysconfig.get_config_var("CFLAGS") or "")) + shlex.split(
        str(sysconfig.get_config_var("CCSHARED") or ""))
    folder = job.work / OBJECTS
    sources = [job.source, *(case_path(s, job.case_folder) for s in _listed(job, "sources"))]
    compiles: list[tuple[str, list[str]]] = []
    objects: list[Path] = []
    for number, source in enumerate(sources):
        obj = folder / f"{number}-{Path(source).stem}.o"
        objects.append(obj)
        if source.endswith(".cu"):
            command = [job.env.nvcc, "-ccbin", host, *includes, "-c", source, "-o", str(obj),
                       *flags.with_std([*flags.nvcc, *nvcc_own, *arch, *defines])]
        else:
            command = [host, *python_cflags, *includes, "-c", source, "-o", str(obj),
                       *flags.with_std([*cxx_own, *defines])]
        compiles.append((source, command))
    library = folder / f"{name}{python.ext_suffix}"
    torch_lib = package / "lib"
    link: list[str] | None = None
    note = ""
    if (torch_lib / "libtorch.so").is_file():
        link = [host, "-shared", *map(str, objects), f"-L{torch_lib}",
                *(f"-L{d}" for d in job.env.library_dirs),
                *(f"-l{lib}" for lib in flags.libraries), "-o", str(library)]
    else:
        note = (f"torch {job.library.version} here is its wheel's headers, not its libraries: "
                "built to objects, not linked")
    facts: dict[str, Any] = {
        "torch": job.library.version, "extension": name, "python": python.version,
        "python_include": list(python.include_dirs),
        "torch_nvcc_flags": list(flags.nvcc), "torch_defines": defines,
        "cxx11_abi": flags.cxx11_abi, "libraries": list(flags.libraries)}
    if flags.pybind11_names and pybind11 is None:
        facts["pybind11_abi"] = (f"PYBIND11_{', PYBIND11_'.join(flags.pybind11_names)}: "
                                 "valued by a compiled torch only; pybind11's own here")
    return Plan(compiles, link, library, objects, note, facts)


def _failed(log: str, started: float, facts: dict[str, Any], code: int,
            accident: str | None) -> StageResult:
    if accident:
        return StageResult("compile", "error", accident, log, time.monotonic() - started, facts,
                           accident=accident)
    line = decisive_line(log) or f"exit status {code}"
    return StageResult("compile", "failed", line, log, time.monotonic() - started, facts)


def compile_extension(job: Job) -> tuple[StageResult, list[Path]]:
    """The compile stage, and the files the inspect stage reads (the library, else the
    kernels' objects)."""
    started = time.monotonic()
    if job.library is None or job.env is None or job.env.nvcc is None:
        return StageResult("compile", "error", "a torch-extension cell needs the torch "
                           "library axis and a toolkit with nvcc"), []
    header = Path(python_headers(job).include_dirs[0]) / "Python.h"
    if not header.is_file():
        return StageResult("compile", "unavailable", f"no {header} for the extension's "
                           f"binding: this Python's headers are not installed (Debian: "
                           f"python{sys.version_info.major}.{sys.version_info.minor}-dev)"), []
    flags = read_flags(torch_package(job))
    if not isinstance(flags, TorchFlags):
        return StageResult("compile", "error", f"torch {job.library.version}: "
                           f"{flags.reason}"), []
    try:
        plan = build_plan(job, flags)
    except ValueError as exc:
        return StageResult("compile", "error", str(exc)), []
    (job.work / OBJECTS).mkdir(parents=True, exist_ok=True)
    logs: list[str] = []

    # Each file's ptxas figures (where its flags ask for -v), read off its whole output:
    # the spills a budget judges, which the built library's cubins do not record.
    figures = [PtxasFigures() for _ in plan.compiles]

    def run(command: list[str], reader: PtxasFigures | None = None) -> ToolRun:
        remaining = max(1.0, job.timeout - (time.monotonic() - started))
        return run_tool(command, remaining, memory_bytes=job.memory_bytes, cwd=job.work,
                        reader=reader)

    # The files at once, as ninja builds them for build_ext (a job per core); the first
    # file that fails, in the case's order, decides.
    workers = max(1, min(len(plan.compiles), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = list(pool.map(run, [command for _, command in plan.compiles], figures))
    steps = [*zip([c for _, c in plan.compiles], runs, strict=True)]
    if plan.link and all(r.code == 0 for r in runs):
        steps.append((plan.link, run(plan.link)))
    for command, tool in steps:
        logs.append(f"$ {shown(command)}\n{tool.output}".strip())
        if tool.code != 0:
            return _failed("\n".join(logs), started, plan.facts, tool.code,
                           tool.accident), []
    if plan.note:
        logs.append(f"# {plan.note}")
    log = "\n".join(logs)
    facts = {**plan.facts, "warnings": warning_lines(log),
             "outputs": [str(p) for p in ([plan.library] if plan.link else plan.objects)],
             PTXAS_FIGURES: [r for f in figures for r in f.for_arch(job.arch)]}
    kernels = [o for (source, _), o in zip(plan.compiles, plan.objects, strict=True)
               if source.endswith(".cu")]
    return (StageResult("compile", "ok", plan.note, log, time.monotonic() - started, facts),
            [plan.library] if plan.link else kernels)


SMOKE = r"""
import importlib.util, json, sys, time
path, name, call, args, expect, rtol, atol, result = sys.argv[1:9]
said = {}
started = time.monotonic()
import torch
spec = importlib.util.spec_from_file_location(name, path)
ext = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ext)
said["load_s"] = round(time.monotonic() - started, 3)
said["torch"] = torch.__version__
said["functions"] = sorted(n for n in dir(ext) if not n.startswith("_"))
print(json.dumps({"loaded": said}), flush=True)
if not call:
    sys.exit(0)
scope = {"torch": torch, "ext": ext}
given = eval(args, scope)
given = given if isinstance(given, tuple) else (given,)
got = getattr(ext, call)(*given)
torch.cuda.synchronize()
# What is compared: the call's value, or what `result` picks (a tensor the call wrote into,
# one of a list it returned); `expect` sees the arguments too.
scope.update(args=given, got=got)
got = eval(result or "got", scope)
wanted = eval(expect, scope) if expect else None
if torch.is_tensor(got) or torch.is_tensor(wanted):
    got_t, wanted_t = torch.as_tensor(got).cpu(), torch.as_tensor(wanted).cpu()
    same = got_t.shape == wanted_t.shape and torch.allclose(
        got_t.to(wanted_t.dtype), wanted_t, rtol=float(rtol), atol=float(atol))
    shown_got = got_t.flatten()[:8].tolist()
    shown_wanted = wanted_t.flatten()[:8].tolist()
else:
    same, shown_got, shown_wanted = (got == wanted), repr(got), repr(wanted)
print(json.dumps({"ran": {"same": bool(same) if expect else None, "got": shown_got,
                          "expected": shown_wanted}}), flush=True)
"""


def _said(output: str, key: str) -> dict[str, Any] | None:
    for line in output.splitlines():
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and key in data:
                return dict(data[key])
    return None


def load_and_run(job: Job, library: Path) -> list[StageResult]:
    """The library imported by the torch installed here and the case's call made, in a
    process of its own (a crash in the extension is its cell's, not the worker's)."""
    started = time.monotonic()
    assert job.env is not None
    opts = job.options
    variables = {"LD_LIBRARY_PATH": os.pathsep.join(
        [*job.env.library_dirs, os.environ.get("LD_LIBRARY_PATH", "")]).strip(os.pathsep)}
    if job.gpu:
        variables["CUDA_VISIBLE_DEVICES"] = job.gpu
    env = cell_environment(variables)
    command = [sys.executable, "-c", SMOKE, str(library), extension_name(job),
               str(opts.get("call", "")), str(opts.get("args", "()")),
               str(opts.get("expect", "")), str(opts.get("rtol", 1e-5)),
               str(opts.get("atol", 1e-8)), str(opts.get("result", "got"))]
    # Under the cell's memory limit as every tool: written memory, which a CUDA process's
    # reservations do not count against (process/limits.py).
    tool = run_tool(command, max(1.0, job.timeout), memory_bytes=job.memory_bytes, env=env,
                    cwd=job.work)
    log = tool.output.strip()
    loaded = _said(tool.output, "loaded")
    seconds = time.monotonic() - started
    load = StageResult("load", "error" if tool.accident else "failed",
                       tool.accident or decisive_line(log) or "the import failed", log,
                       seconds) if loaded is None else \
        StageResult("load", "ok", f"imported by torch {loaded.get('torch')}", "",
                    float(loaded.get("load_s", 0.0)), loaded)
    stages = [load]
    if stops(load) or not opts.get("call"):  # the pipeline's rule: no call after no import
        return stages
    ran = _said(tool.output, "ran")
    if ran is None:
        stages.append(StageResult("run", "error" if tool.accident else "failed",
                                  tool.accident or decisive_line(log) or "the call failed",
                                  log, seconds))
    elif ran.get("same") is False:
        stages.append(StageResult("run", "failed", f"{opts.get('call')}{opts.get('args')} "
                                  f"gave {ran['got']}, expected {ran['expected']}", log,
                                  seconds, ran))
    else:
        stages.append(StageResult("run", "ok", "", log, seconds, ran))
    return stages


def torch_extension_steps(job: Job) -> list[Step]:
    """A torch-extension cell's steps, run by the pipeline's loop: the compile (each file,
    then the link), the inspect of what it made, and on a GPU the load and the run, one
    step: the library is imported and called in one process of its own (torch's import
    is most of its cost, and the call needs the module that import made)."""
    cell = _ExtensionCell(job)
    return [Step("compile", cell.compile, measured=True), Step("inspect", cell.inspect),
            Step("load", cell.load_and_run, gpu=True)]


class _ExtensionCell:
    """What a torch-extension cell's steps hand each other: the files its compile made
    for the inspect to read (the linked library, else the kernels' objects)."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.outputs: list[Path] = []

    def compile(self, carried: Carried) -> list[StageResult]:
        built, self.outputs = compile_extension(self.job)
        return [built]

    def inspect(self, carried: Carried) -> list[StageResult]:
        from .build_run import audit_outputs

        built = carried.last("compile")
        ptxas = built.details.get(PTXAS_FIGURES, []) if built is not None else []
        inspected, _ = audit_outputs(self.job, self.outputs, ptxas)
        return [inspected]

    def load_and_run(self, carried: Carried) -> list[StageResult]:
        """Nothing to load where the compile stopped at the objects (a wheel's headers, no
        torch libraries to link against): the cell ends at its inspect. A library built
        against another Python's headers (the python axis) is not imported by this one:
        the load says so, a stage not run here, not a failure of the case."""
        built = carried.last("compile")
        library = Path(built.details["outputs"][0]) if built is not None else Path()
        if library.suffix != ".so":
            return []
        here = PythonHeaders.of_this_interpreter()
        if not library.name.endswith(here.ext_suffix):
            built_against = built_for(library) or "another Python"
            return [StageResult("load", "skipped", f"built against Python {built_against}'s "
                                f"headers; this Python is {here.version}: not imported")]
        return load_and_run(self.job, library)


# Its cells' default limit: CUDAExtension compiles torch's headers per file, for minutes
# (469 s for the docs' example on a loaded laptop), four times that and more.
TIMEOUT_S = 1800.0


register(Frontend(NAME, steps=torch_extension_steps, needs=("nvcc",), library="torch",
                  cached=False, timeout_s=TIMEOUT_S, guess_s=300.0, reports_resources=True,
                  python_headers=True,
                  options=tuple(k for k, _ in OPTIONS), option_defaults=OPTIONS,
                  path_options=(("sources", PATHS), ("cxx_flags", FLAGS))))
