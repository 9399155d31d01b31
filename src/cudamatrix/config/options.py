"""A run's options, each with its default and the flag that sets it, in one place (as nox's
and attrs' options carry their flag with their field): the command line is made from the
flags here (config/run_flags.py gathers them), and the benchmark and the tests start from
`RunOptions` as well, so a default, or the environment variable that sets it, cannot differ
between them. Adding a run option is its field here, with its flag, and the code that
reads it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

from ..common.tomlfile import load_toml
from ..errors import UserError
from . import flags
from .defaults import CONTAINERS, DEFAULT_MATRIX, KNOWN_BUGS

DEFAULT_CELL_TIMEOUT_S = 300.0
# CuPy's one-time Jitify warm-up: far above a cell's own limit, as it is slow by design
# and happens once.
DEFAULT_WARMUP_TIMEOUT_S = 1800.0
# A container's own limit (the docker provider).
DEFAULT_CONTAINER_TIMEOUT_S = 6 * 3600
# The environment variables that set a default (a CI runner's label, its provider).
PROVIDER_ENV = "CUDAMATRIX_PROVIDER"
RUNNER_LABEL_ENV = "CUDAMATRIX_RUNNER_LABEL"
CACHE_ENV = "CUDAMATRIX_CACHE"
# Caches read beside the run's own, never written (os.pathsep between folders).
COMPILE_CACHE_FROM_ENV = "CUDAMATRIX_COMPILE_CACHE_FROM"
# The toolkit images the docker provider builds: PyPI's wheels, or NVIDIA's own images.
DockerFlavour = Literal["wheels", "nvidia"]
DOCKER_FLAVOURS: tuple[DockerFlavour, ...] = get_args(DockerFlavour)
# The orders cells may start in (RunOptions.order).
Order = Literal["cost", "plan", "reversed"]
ORDERS: tuple[Order, ...] = get_args(Order)
# How the cells that differ only in arch are compiled (RunOptions.compile_strategy;
# orchestrator/compile_strategy.py says what each does and when auto takes which).
CompileStrategy = Literal["auto", "grouped", "threads", "apart"]
COMPILE_STRATEGIES: tuple[CompileStrategy, ...] = get_args(CompileStrategy)
# The frontends --prebuilt still compiles here: CuPy always compiles through the driver.
COMPILE_HERE = ("cupy",)
# Where a RunOptions field keeps the flag that sets it.
FLAG = "flag"


def flagged(value: Any, flag: flags.RunFlag) -> Any:
    """A field with its default and the flag that sets it."""
    return field(default=value, metadata={FLAG: flag})


def from_environment(otherwise: Callable[[], Any], flag: flags.RunFlag) -> Any:
    """A field whose default is the environment variable its flag declares (read as the
    flag's words are), else `otherwise()`: the variable is named once, on the flag."""
    return field(default_factory=lambda: flag.environment_default(os.environ, otherwise),
                 metadata={FLAG: flag})


def flagged_factory(factory: Callable[[], Any], flag: flags.RunFlag) -> Any:
    """A field whose default is made as the options are (an environment variable's, the
    machine's), with the flag that sets it."""
    return field(default_factory=factory, metadata={FLAG: flag})


def declared_tiers(matrix: Path = DEFAULT_MATRIX) -> tuple[list[str], str]:
    """The tiers the matrix file declares, in its order, and its default tier: what a help
    text or a written workflow names, read from the one place that defines them."""
    declared = load_toml(matrix)
    names = [str(name) for name in declared.get("tiers", {})]
    return names, str(declared.get("default_tier", names[0] if names else ""))


def tier_help(matrix: Path = DEFAULT_MATRIX) -> str:
    """--tier's help, its tiers read from the matrix file that declares them: a list written
    here by hand said "pr or nightly" long after the gpu tier came (issue 82)."""
    names, default_tier = declared_tiers(matrix)
    listed = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)
    return (f"the matrix tier: {listed}, or one cudamatrix.toml declares (default: "
            f"default_tier, {default_tier} unless cudamatrix.toml sets another)")


@dataclass(frozen=True)
class RunOptions:
    matrix: Path = DEFAULT_MATRIX
    # A project's tables laid over the matrix file (cudamatrix.toml's tiers).
    matrix_overrides: dict[str, Any] = field(default_factory=dict)
    # The file those tables come from (cudamatrix.toml, pyproject.toml): named in an error.
    overrides_file: Path | None = None
    corpus: tuple[Path, ...] = (KNOWN_BUGS,)
    # [paths] of the project: trees its cases name as {NAME} (config/project.py).
    paths: Mapping[str, Path] = field(default_factory=dict)
    # A source (git:file:///repo@commit) built in place of every build case's own project:
    # `cudamatrix bisect --over project` builds the user's project one commit at a time.
    project_override: str = ""
    tier: str | None = flagged(
        None,
        flags.RunFlag(
            ("--tier",),
            tier_help(),
            "selection",
            read=str,
            repro=True,
        ),
    )
    toolkits: tuple[str, ...] = flagged(
        (),
        flags.RunFlag(
            ("--toolkit",),
            "run only these toolkits (repeatable), e.g. 12.4",
            "selection",
            read=str,
            repeated=True,
            job=True,
        ),
    )
    archs: tuple[str, ...] = flagged(
        (),
        flags.RunFlag(
            ("--arch",),
            "run only these archs (repeatable), e.g. sm_90a",
            "selection",
            read=str,
            repeated=True,
        ),
    )
    # nvcc's host compilers as an axis (--host-compiler), in place of the tier's list.
    host_compilers: tuple[str, ...] = flagged(
        (),
        flags.RunFlag(
            ("--host-compiler",),
            "nvcc's host compilers as an axis (repeatable), e.g. g++-11 "
            "clang++-19: each nvcc cell once per compiler, in place of the tier's "
            "host_compiler list",
            "selection",
            read=flags.host_compiler,
            repeated=True,
            job=True,
        ),
    )
    cases: tuple[str, ...] = flagged(
        (),
        flags.RunFlag(
            ("--case",), "run only these cases", "selection", read=str, repeated=True, job=True
        ),
    )
    # Only the variants of these names (--variant), of every case selected.
    variants: tuple[str, ...] = flagged(
        (),
        flags.RunFlag(
            ("--variant",),
            "run only the cases' variants of this name (repeatable)",
            "selection",
            read=str,
            repeated=True,
            metavar="NAME",
            job=True,
        ),
    )
    # Exact cell ids (case/variant/toolkit/arch[/library-version]): the report's repro.
    cell_ids: tuple[str, ...] = flagged(
        (),
        flags.RunFlag(
            ("--cell",),
            "run only this cell (an id as `cudamatrix list` prints it)",
            "selection",
            read=str,
            repeated=True,
            metavar="ID",
            job=True,
        ),
    )
    shard: tuple[int, int] | None = flagged(
        None,
        flags.RunFlag(
            ("--shard",),
            "run shard i of n (1-based), e.g. 2/4",
            "selection",
            read=flags.shard,
            spell=lambda given: f"{given[0]}/{given[1]}",
        ),
    )
    # Releases of matrix libraries in place of the tier's (--library cutlass==3.7.0): the
    # plan's matrix chooses them (Matrix.choosing), a release the file does not list too.
    # A selection's flag: it changes which cells there are (their ids name the release),
    # so every command that plans takes it and a plan's jobs carry it.
    library_versions: Mapping[str, tuple[str, ...]] = flagged_factory(
        dict,
        flags.RunFlag(
            ("--library",),
            "this release of a library in place of the tier's (any release "
            "on the index, listed in the matrix or not); repeatable",
            "selection",
            read=flags.library_pin,
            repeated=True,
            collect=flags.pins,
            spread=flags.unpin,
            spell=lambda pin: f"{pin[0]}=={pin[1]}",
            metavar="NAME==VERSION",
            section="toolkits",
            job=True,
            not_in_repro="the cell's id names its library release",
        ),
    )
    out: Path = flagged(
        Path("reports/latest"),
        flags.RunFlag(
            ("--out",),
            "report folder (default: %(default)s)",
            "run",
            read=Path,
            section="output",
            not_in_repro="a repro writes to a folder of its own, reports/repro/CELL "
                         "(config/repro_line.py)",
        ),
    )
    provider: str = from_environment(
        lambda: "auto",
        flags.RunFlag(
            ("--provider",),
            "where toolkits come from: wheels, docker, host or a plugin's; "
            "auto: docker where an engine and the base image are ready, else wheels",
            "run",
            read=str,
            metavar="PROVIDER",
            default_said="`auto`",
            environment=PROVIDER_ENV,
            section="toolkits",
            not_in_repro="the repro line names the provider the run took (repro.py)",
        ),
    )
    containers: Path = flagged(
        CONTAINERS,
        flags.RunFlag(
            ("--containers",),
            "the Dockerfiles of the docker provider (default: %(default)s)",
            "run",
            read=Path,
            section="toolkits",
            not_in_repro="the images a container provider builds; their tags are in the record",
        ),
    )
    docker_flavour: DockerFlavour = flagged(
        "wheels",
        flags.RunFlag(
            ("--docker-flavour",),
            "toolkit images from PyPI wheels on a local Debian base "
            "(no registry needed), or from NVIDIA's pinned CUDA images",
            "run",
            read=str,
            choices=DOCKER_FLAVOURS,
            repro=True,
            section="toolkits",
        ),
    )
    # Run the cells on NVIDIA's forward-compatibility libraries (cuda-compat) instead of
    # the host driver's own libcuda: a newer toolkit on an older driver, as a run of its own.
    cuda_compat: bool = flagged(
        False,
        flags.RunFlag(
            ("--cuda-compat",),
            "with NVIDIA's images, run on the forward-compatibility "
            "libraries (a newer toolkit on an older driver); label the runner apart",
            "run",
            repro=True,
            section="toolkits",
        ),
    )
    container_timeout: float = flagged(
        DEFAULT_CONTAINER_TIMEOUT_S,
        flags.RunFlag(
            ("--container-timeout",),
            "seconds a toolkit container may live (default: %(default)s)",
            "run",
            read=flags.positive_number,
            section="toolkits",
            not_in_repro="a limit on building an image, not on the cell",
        ),
    )
    jobs: int = flagged_factory(
        lambda: os.cpu_count() or 1,
        flags.RunFlag(
            ("--jobs", "-j"),
            "cells run in parallel (default: the number of cores)",
            "run",
            read=flags.whole_number(1, 4096),
            default_said="the number of cores",
            not_in_repro="how many cells run at once; one cell is one job",
        ),
    )
    cache: Path = from_environment(
        lambda: _user_cache(),
        flags.RunFlag(
            ("--cache",),
            "where environments are kept",
            "run",
            read=Path,
            repro=True,
            default_said="$XDG_CACHE_HOME/cudamatrix or ~/.cache/cudamatrix",
            environment=CACHE_ENV,
            section="toolkits",
        ),
    )
    # None: each cell its frontend's own limit (a torch extension compiles for minutes),
    # else DEFAULT_CELL_TIMEOUT_S; a case's `timeout` comes before either.
    cell_timeout: float | None = flagged(
        None,
        flags.RunFlag(
            ("--cell-timeout",),
            "seconds one cell may take (default: its frontend's own limit, a torch "
            f"extension's 1800, else {DEFAULT_CELL_TIMEOUT_S:.0f}; a case's `timeout` "
            "comes first)",
            "run",
            default_said=f"its frontend's own, else {DEFAULT_CELL_TIMEOUT_S:.0f}",
            read=flags.positive_number,
            repro=True,
        ),
    )
    # The limit of CuPy's one-time Jitify warm-up, shared by the run's jitify cells.
    jitify_warmup_timeout: float = flagged(
        DEFAULT_WARMUP_TIMEOUT_S,
        flags.RunFlag(
            ("--jitify-warmup-timeout",),
            "seconds CuPy's one-time Jitify warm-up may take; "
            "done once per CuPy version and toolkit for the run's jitify cells, which share "
            "its time-out (default: %(default)s)",
            "run",
            read=flags.positive_number,
            not_in_repro="CuPy's one-time warm-up, shared by the run's cells",
        ),
    )
    # Address space per compiler process; None: the machine's memory shared by the jobs.
    cell_memory_gib: float | None = flagged(
        None,
        flags.RunFlag(
            ("--cell-memory",),
            "address space each compiler may take (default: the "
            "machine's memory shared by --jobs, 4 to 16 GiB)",
            "run",
            read=flags.positive_number,
            metavar="GIB",
            not_in_repro="a limit the repro's machine sets for itself",
        ),
    )
    run_timeout: float | None = flagged(
        None,
        flags.RunFlag(
            ("--run-timeout",),
            "seconds the whole run may take; cells it cannot start are "
            "reported as timeouts and left for --resume",
            "run",
            read=flags.positive_number,
            not_in_repro="the whole run's limit; one cell has its own",
        ),
    )
    resume: bool = flagged(
        False,
        flags.RunFlag(
            ("--resume",),
            "keep the cells an interrupted run in --out finished",
            "run",
            section="output",
            not_in_repro="a repro starts afresh",
        ),
    )
    gpu: bool = flagged(
        True,
        flags.RunFlag(("--no-gpu",), "skip the load and run stages", "run", sets=False, repro=True),
    )
    # A cell's load and run stages in its GPU's server (one context per GPU, every GPU of
    # the machine), or, with --context-per-cell, in a context of the cell's own process.
    gpu_server: bool = flagged(
        True,
        flags.RunFlag(
            ("--context-per-cell",),
            "each cell's load and run stages in a CUDA context of "
            "its own process, not in its GPU's server (one context per GPU)",
            "run",
            sets=False,
            not_in_repro="where the GPU stages run, not what they do",
        ),
    )
    compile_cache: bool = flagged(
        True,
        flags.RunFlag(
            ("--no-compile-cache",),
            "compile every cell afresh, neither reading nor filling the cache",
            "run",
            sets=False,
            section="compiles",
            not_in_repro="a repro always compiles afresh, whatever the run did "
                         "(config/repro_line.py)",
        ),
    )
    # The order cells start in: "cost" (the longest expected first: the run does not end
    # on one), "plan" (as `cudamatrix list` prints them) or "reversed" (the plan's,
    # backwards). A verdict never depends on it: "reversed" is a determinism check.
    order: Order = flagged(
        "cost",
        flags.RunFlag(
            ("--order",),
            "the order cells start in: the longest expected first (cost), the "
            "plan's, or the plan's reversed (a determinism check: no verdict may change)",
            "run",
            read=str,
            choices=ORDERS,
            not_in_repro="the order cells start in; one cell has none",
        ),
    )
    # How many times more a cell that is not what its case expects is run (--retries): a
    # cell that fails and then is as expected is flaky, every attempt recorded.
    retries: int = flagged(
        0,
        flags.RunFlag(
            ("--retries",),
            "run a cell that is not what its case expects up to N times "
            "more; a cell that fails and then is as expected is flaky, every attempt recorded "
            "(default: %(default)s)",
            "run",
            read=flags.whole_number(0, 5, " (a flaky cell shows in two or three)"),
            metavar="N",
            not_in_repro="a repro shows one attempt",
        ),
    )
    # The cells that differ only in arch built by one nvcc (a -gencode each), as a real
    # build makes them; --compile-apart builds each alone (as `--cell ID` always does).
    compile_together: bool = flagged(
        True,
        flags.RunFlag(
            ("--compile-apart",),
            "build each cell by itself, one nvcc per arch (by default "
            "the cells that differ only in arch share one nvcc, a -gencode each)",
            "run",
            sets=False,
            section="compiles",
            not_in_repro="a repro builds its one cell alone",
        ),
    )
    # How a group of cells that differ only in arch is compiled: one nvcc for all its archs
    # (grouped: the host pass paid once), that nvcc running its archs side by side
    # (threads: nvcc --threads), each arch its own nvcc (apart: as --compile-apart), or
    # chosen per group from the machine's cores (auto). A verdict never depends on it.
    compile_strategy: CompileStrategy = flagged(
        "auto",
        flags.RunFlag(
            ("--compile-strategy",),
            "how the cells that differ only in arch are compiled: one nvcc for all their "
            "archs (grouped), one nvcc running them side by side (threads: nvcc --threads), "
            "one nvcc per arch (apart), or per group from the cores free (auto: a group "
            "that would end the run alone is split, a group starting while cores idle gets "
            "--threads); no verdict depends on it (default: %(default)s)",
            "run",
            read=str,
            choices=COMPILE_STRATEGIES,
            section="compiles",
            not_in_repro="a repro builds its one cell alone",
        ),
    )
    # Other cudamatrix caches whose compiled cells this run may take, never writing to
    # them: a CI job's restored cache, a team's shared one (--compile-cache-from).
    compile_cache_from: tuple[Path, ...] = from_environment(
        tuple,
        flags.RunFlag(
            ("--compile-cache-from",),
            "also take compiled cells from this cudamatrix cache "
            "(repeatable), never writing to it: a CI job's restored cache, a team's shared "
            "one",
            "run",
            read=Path,
            repeated=True,
            metavar="CACHE",
            environment=COMPILE_CACHE_FROM_ENV,
            section="compiles",
            not_in_repro="a repro compiles afresh",
        ),
    )
    prebuilt: Path | None = flagged(
        None,
        flags.RunFlag(
            ("--prebuilt",),
            "take compiled artifacts from an earlier run's --out folder "
            "(built on another machine) and do the load and run stages here",
            "run",
            read=Path,
            repro=True,
            section="compiles",
        ),
    )
    # With --prebuilt, the frontends compiled on this machine all the same: CuPy always
    # compiles through the driver; the CuTe DSL script may be run here to launch too.
    compile_here: tuple[str, ...] = flagged(
        COMPILE_HERE,
        flags.RunFlag(
            ("--compile-here",),
            "with --prebuilt, frontends still compiled on this machine "
            f"(repeatable; default: {', '.join(COMPILE_HERE)})",
            "run",
            read=str,
            repeated=True,
            metavar="FRONTEND",
            section="compiles",
            not_in_repro="with --prebuilt only, which the repro carries",
        ),
    )
    runner_label: str = from_environment(
        str,
        flags.RunFlag(
            ("--runner-label",),
            "the driver/runner label this machine was promised",
            "run",
            read=str,
            environment=RUNNER_LABEL_ENV,
            not_in_repro="the machine the repro runs on says its own",
        ),
    )

    def __post_init__(self) -> None:
        """Each flagged field checked where the options are made, by its flag's own reader:
        only words from the command line were checked, so `RunOptions(retries=-1, jobs=0,
        order="bogus")` from a benchmark, a test or a plugin ran with them. A field whose
        default is None may be None (not given)."""
        for option in fields(self):
            flag = option.metadata.get(FLAG)
            value = getattr(self, option.name)
            if flag is None or (value is None and option.default is None):
                continue
            why = flag.refusal(value)
            if why is not None:
                raise UserError(f"run option {option.name} ({flag.name}): {why}")


def default(name: str) -> Any:
    """The default of the option `name`, as a `RunOptions()` made now would have it."""
    found = {f.name: f for f in fields(RunOptions)}.get(name)
    if found is None:
        raise KeyError(f"no run option {name!r}")
    if found.default is not MISSING:
        return found.default
    assert found.default_factory is not MISSING
    return found.default_factory()


def default_cell_memory(jobs: int) -> int:
    """Bytes of address space one cell's compiler may take: the machine's memory shared by
    the cells running at once, 4 to 16 GiB. A bound, so that ``#include "/dev/zero"`` or a
    runaway template ends its own cell, not the machine."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 16 << 30
    return int(min(16 << 30, max(4 << 30, total // max(1, jobs))))


def _user_cache() -> Path:
    """The user's cache folder for the tool, where $CUDAMATRIX_CACHE names none."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "cudamatrix"


def default_cache() -> Path:
    """The cache a run given no --cache keeps (for the parts of the tool that have no run's
    options: the reports' template and chart caches, audit, repro)."""
    cache: Path = default("cache")
    return cache
