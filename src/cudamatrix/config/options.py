"""A run's options and their defaults, in one place: the command line takes its defaults
from here (`default`; its flags are declared in run_flags.py), and the benchmark and the
tests start from `RunOptions` as well, so a default, or the environment variable that sets
it, cannot differ between them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

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


@dataclass(frozen=True)
class RunOptions:
    matrix: Path = DEFAULT_MATRIX
    # A project's tables laid over the matrix file (cudamatrix.toml's tiers).
    matrix_overrides: dict[str, Any] = field(default_factory=dict)
    # The file those tables come from (cudamatrix.toml, pyproject.toml): named in an error.
    overrides_file: Path | None = None
    corpus: tuple[Path, ...] = (KNOWN_BUGS,)
    out: Path = Path("reports/latest")
    tier: str | None = None
    toolkits: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()
    # nvcc's host compilers as an axis (--host-compiler), in place of the tier's list.
    host_compilers: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()
    # Only the variants of these names (--variant), of every case selected.
    variants: tuple[str, ...] = ()
    # Exact cell ids (case/variant/toolkit/arch[/library-version]): the report's repro.
    cell_ids: tuple[str, ...] = ()
    provider: str = field(default_factory=lambda: os.environ.get(PROVIDER_ENV, "auto"))
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    cache: Path = field(default_factory=lambda: default_cache())
    cell_timeout: float = DEFAULT_CELL_TIMEOUT_S
    # Address space per compiler process; None: the machine's memory shared by the jobs.
    cell_memory_gib: float | None = None
    run_timeout: float | None = None
    shard: tuple[int, int] | None = None
    resume: bool = False
    gpu: bool = True
    runner_label: str = field(default_factory=lambda: os.environ.get(RUNNER_LABEL_ENV, ""))
    prebuilt: Path | None = None
    # With --prebuilt, the frontends compiled on this machine all the same: CuPy always
    # compiles through the driver; the CuTe DSL script may be run here to launch too.
    compile_here: tuple[str, ...] = ("cupy",)
    compile_cache: bool = True
    # The cells that differ only in arch built by one nvcc (a -gencode each), as a real
    # build makes them; --compile-apart builds each alone (as `--cell ID` always does).
    compile_together: bool = True
    # The order cells start in: "cost" (the longest expected first: the run does not end
    # on one), "plan" (as `cudamatrix list` prints them) or "reversed" (the plan's,
    # backwards). A verdict never depends on it: "reversed" is a determinism check.
    order: Order = "cost"
    # Releases of matrix libraries in place of the tier's (--library cutlass==3.7.0): the
    # plan's matrix chooses them (Matrix.choosing), a release the file does not list too.
    library_versions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # [paths] of the project: trees its cases name as {NAME} (config/project.py).
    paths: Mapping[str, Path] = field(default_factory=dict)
    # Other cudamatrix caches whose compiled cells this run may take, never writing to
    # them: a CI job's restored cache, a team's shared one (--compile-cache-from).
    compile_cache_from: tuple[Path, ...] = field(default_factory=lambda: _compile_cache_from())
    containers: Path = CONTAINERS
    docker_flavour: DockerFlavour = "wheels"
    container_timeout: float = DEFAULT_CONTAINER_TIMEOUT_S
    # Run the cells on NVIDIA's forward-compatibility libraries (cuda-compat) instead of
    # the host driver's own libcuda: a newer toolkit on an older driver, as a run of its own.
    cuda_compat: bool = False
    # The limit of CuPy's one-time Jitify warm-up, shared by the run's jitify cells.
    jitify_warmup_timeout: float = DEFAULT_WARMUP_TIMEOUT_S
    # A cell's load and run stages in its GPU's server (one context per GPU, every GPU of
    # the machine), or, with --context-per-cell, in a context of the cell's own process.
    gpu_server: bool = True
    # How many times more a cell that is not what its case expects is run (--retries): a
    # cell that fails and then is as expected is flaky, every attempt recorded.
    retries: int = 0
    # A source (git:file:///repo@commit) built in place of every build case's own project:
    # `cudamatrix bisect --over project` builds the user's project one commit at a time.
    project_override: str = ""


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


def _compile_cache_from() -> tuple[Path, ...]:
    listed = os.environ.get(COMPILE_CACHE_FROM_ENV, "")
    return tuple(Path(p) for p in listed.split(os.pathsep) if p)


def default_cache() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "cudamatrix"
