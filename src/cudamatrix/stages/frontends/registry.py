"""The registry of frontends by name (the package's __init__ fills it): what each needs
from a toolkit, which library axis it multiplies its cells by, whether it brings its own
compiler, whether its compiles are cached, and how it builds (its compile, or its own
steps, as CuPy's are). Each built-in frontend is a module of this package (nvrtc, nvcc, clang, cupy,
cutlass, cute_dsl, cutlass_python, build) holding its cell-side part (its compile, the
tools it needs, its option schema); its orchestrator-side part is
orchestrator/job_preparation.py's, by the frontend's name (a plugin's is its `prepare`),
so nothing here imports the orchestrator.

Before, each of those facts lived in another module (a list of names here, a set of
cacheable ones there), and forgetting one silently turned caching off or ran a cell
without its tool. Which stages a cell goes through, in which order, is not a frontend's:
it gives its compile (or its own steps) and stages/runtime/pipeline.py runs them.

Adding a frontend is one module registering one entry, found by its
``cudamatrix.frontends`` entry point (a plugin package declares its own), or named in
``CUDAMATRIX_FRONTENDS`` (comma-separated importable modules, each calling
:func:`register`), read by the run and by every cell worker alike.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...common import plugins
from ...errors import UserError
from ..cell.job import Job
from ..cell.result import StageResult
from ..cell.steps import Step
from ..compile.built import Build

PLUGINS_ENV = "CUDAMATRIX_FRONTENDS"
# The orchestrator's side of a job, run in the run's process: the job and the run's
# context (job_preparation.JobContext) in, the prepared job or the stage saying why not
# out. A built-in frontend's is job_preparation.BUILT_IN's and a plugin names its own
# ("module:function") or gives it, so a cell's worker, which reads this registry, never
# imports the orchestrator's modules.
Prepare = Callable[[Job, Any], "Job | StageResult"]

# What a compiler line of a cell is for: the compile itself; the line its log shows to
# build it again by hand (the compile less the tool's own scratch); the kernel probe
# (kernel_probe.py: device-only PTX of a few lines naming the kernel); the since-which-arch
# search's device preprocessing of the unit for one arch and its host pass (nvcc's dry
# run, whose host preprocessing line it then runs: arch_guard.py).
Purpose = Literal["compile", "repro", "probe", "preprocess", "host_pass"]


@dataclass(frozen=True)
class Line:
    """Which compiler lines a frontend's `command_lines` is asked for: the purpose, the
    one arch a preprocessing is for ("" for the cell's own), and how many archs nvcc
    builds side by side in a group's compile (--threads)."""

    purpose: Purpose
    arch: str = ""
    threads: int = 1


# A frontend's one maker of every compiler line a cell gives its compilers, by purpose:
# [] where the frontend has no such step (NVRTC has no probe and no preprocessor).
CommandLines = Callable[[Job, Line], list[list[str]]]


@dataclass(frozen=True)
class Frontend:
    name: str
    # Builds the cell's PTX/cubin/library; the pipeline's inspect, load and run steps follow.
    compile: Callable[[Job], Build] | None = None
    # The one function that makes every compiler line of a cell (Line: the compile, its
    # repro line, the kernel probe, the preprocessing), used by the frontend's own steps
    # and made without running anything: a key that reaches the compile reaches every
    # other line from here, and whatever reaches a line must be in the compile key
    # (tests/unit/test_declared_keys.py runs a cell on a logging nvcc to hold both).
    command_lines: CommandLines | None = None
    # Builds the cells of a job's group (only their archs differ) at once, a compile stage
    # each, or one stage saying why they must be built apart (see nvcc.compile_together).
    compile_together: Callable[[Job], list[StageResult]] | None = None
    # Or: the frontend's own steps, each a stage (cell/steps.py), run by the pipeline's one
    # loop: CuPy compiles and loads through the driver, a build runs the project's test.
    steps: Callable[[Job], Sequence[Step]] | None = None
    needs: tuple[str, ...] = ()  # tools the cell's toolkit must have (Environment fields)
    library: str | None = None  # the library axis (matrix.toml [libraries.<name>])
    toolkit_free: bool = False  # brings its own compiler: the toolkit axis does not apply
    cached: bool = True  # its compile results go to the compile cache
    # Compiles through the driver (CuPy): with no GPU here its cells are skips saying so.
    needs_gpu_to_compile: str | None = None
    # A case option that sends the source through a preprocessor before the arch flag is
    # added (CuPy's jitify): with it set, the arch never reached that step.
    arch_bypass_option: str | None = None
    # Seconds a cell of it is guessed to take before a run has timed one here or on the
    # reference machine: the first run's order (longest first, so a slow build is not left
    # alone at the end) and the ETA until a cell of its kind has finished (cell_timings).
    # On a 2-core machine: an NVRTC or nvcc kernel 0.1-2 s, a CuTe DSL compile 3.5-4.4 s,
    # a CUTLASS GEMM a minute, a project's build or a PyTorch extension minutes. One guess
    # for every fast frontend made a CuTe DSL compile cost what an NVRTC one took (0.06 s).
    guess_s: float = 1.0
    # Its cells' limit (seconds) where neither the case's `timeout` nor --cell-timeout sets
    # one; None: the run's default. A torch extension compiles for minutes, and met the
    # run's 300 s on a loaded laptop where it needed 469.
    timeout_s: float | None = None
    options: tuple[str, ...] = ()  # the keys its [variant.options] may hold
    # Their defaults, (key, value), filled in by the case reader: a stage reads each option
    # without a default of its own.
    option_defaults: tuple[tuple[str, Any], ...] = ()
    # Its options whose values name paths, each with its kind (common/confined.py's PATHS:
    # each a file of the case; FLAGS: compiler flags, whose path options name files): the
    # case reader holds
    # each to the one check a variant's `source` and `flags` are held to, and the stage
    # reads them only through option_paths (tests/unit/test_confined_paths.py).
    path_options: tuple[tuple[str, str], ...] = ()
    # Builds a project (its source a folder, its commands in [variant.build]).
    builds_project: bool = False
    # Each kernel's resources are known (ptxas -v; a build's modules through cuobjdump
    # -res-usage): [variant.resources] applies.
    reports_resources: bool = False
    # Its compiles include Python's headers (a pybind11 binding, as setuptools builds it):
    # the `python` axis of a tier or variant multiplies its cells, and no other's.
    python_headers: bool = False
    # A plugin's orchestrator side: what the job needs beyond its case (a folder of links,
    # a fetched project, a warm-up), or the stage that says why it cannot have it; a
    # function, or its name as "module:function" (resolved by the run, never here). The
    # built-ins' are job_preparation.BUILT_IN's.
    prepare: Prepare | str | None = None


_REGISTERED: dict[str, Frontend] = {}
_LOADING: list[bool] = []  # started: the entry points and $CUDAMATRIX_FRONTENDS are read once


def _origin(frontend: Frontend) -> str:
    """Where a frontend comes from: the module of the function that runs it."""
    runs = frontend.compile or frontend.steps
    return str(getattr(runs, "__module__", "?"))


def register(frontend: Frontend) -> Frontend:
    """Add a frontend; a plugin module calls this when imported. A name is one frontend's:
    another that takes it (a plugin's "nvcc", two plugins' one name) is refused in one line
    naming both, whatever its entry point is called, never replacing the first by the
    order of loading."""
    given = [f for f in (frontend.compile, frontend.steps) if f is not None]
    if len(given) != 1:
        raise UserError(f"frontend {frontend.name!r} ({_origin(frontend)}): give exactly one "
                        "of compile or steps")
    taken = _REGISTERED.get(frontend.name)
    if taken is not None and taken != frontend:
        raise UserError(f"frontend {frontend.name!r} of {_origin(frontend)}: the name is "
                        f"{_origin(taken)}'s; give the plugin's frontend another name")
    _REGISTERED[frontend.name] = frontend
    return frontend


def load_entry_points() -> None:
    """Every frontend of the ``cudamatrix.frontends`` entry points: a module that registers
    its frontends when imported, or a `Frontend` itself."""
    for loaded in plugins.load(plugins.FRONTENDS).values():
        if isinstance(loaded, Frontend):
            register(loaded)


def load_plugins() -> None:
    """Import the modules named in $CUDAMATRIX_FRONTENDS (they register their frontends)."""
    for name in filter(None, (n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(name)
        except UserError:
            raise
        except Exception as exc:  # a plugin's import may raise anything
            raise UserError(f"${PLUGINS_ENV}: cannot import {name} "
                            f"({type(exc).__name__}: {exc})") from None


def registered() -> dict[str, Frontend]:
    """Every frontend by name, the entry points' and $CUDAMATRIX_FRONTENDS's loaded on the
    first call, not at import: a plugin module that imports this package (to make its
    `Frontend`, or a command beside it) is then not imported half-way through."""
    if not _LOADING:
        _LOADING.append(True)
        load_entry_points()
        load_plugins()
    return _REGISTERED


def frontend(name: str) -> Frontend:
    return registered()[name]
