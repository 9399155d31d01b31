"""Each option of a run declared once, as nox declares its options in one option set: the
flag, its help, how one word is read, the `RunOptions` field it sets, and whether a plan's
jobs and a cell's repro command carry it. From this table come the parsers of `run`,
`bisect`, `list`, `plan` and `validate` (commands/arguments.py), the `RunOptions` their
arguments make (commands/selection.py), the words of a repro (`repro_arguments`) and of a
plan's job (`job_words`), which `merge --plan` reads back with the same parser. A flag
spelled anywhere else is a second declaration: `words_for` spells a field's flag."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..common.versions import HOST_COMPILER
from .defaults import DEFAULT_MATRIX, KNOWN_BUGS
from .options import (
    CACHE_ENV,
    COMPILE_CACHE_FROM_ENV,
    DOCKER_FLAVOURS,
    ORDERS,
    PROVIDER_ENV,
    RUNNER_LABEL_ENV,
    RunOptions,
    default,
)

# Which commands take a flag: every command that selects cells, or only those that run them.
Group = Literal["selection", "run"]
# Where a command's help lists a flag, by what a user is deciding (`run --help` was one list
# of 127 lines): each section's heading, in the order the help shows them.
Section = Literal["cells", "toolkits", "running", "compiles", "output"]
SECTIONS: dict[Section, str] = {
    "cells": "which cells",
    "toolkits": "toolkits and libraries",
    "running": "how the cells run",
    "compiles": "compiles and their caches",
    "output": "where the results go",
}


def positive_number(text: str) -> float:
    """A positive, finite number (seconds, GiB): nan, inf and 0 are refused by name."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be a positive finite number, got {text!r}")
    return value


def whole_number(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """A reader of a whole number from `low` to `high` (`why`: what the bounds mean)."""
    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise ValueError(f"must be {low} to {high}{why}, got {text!r}")
        return value
    read.__name__ = f"whole number {low} to {high}"
    return read


def host_compiler(text: str) -> str:
    """A host compiler program name (g++-11, clang++-19), refused by name otherwise."""
    if not HOST_COMPILER.fullmatch(text):
        raise ValueError(f"{text!r} is not a host compiler program (g++, g++-12, clang++-19)")
    return text


def shard(text: str) -> tuple[int, int]:
    """i/n: the i-th of n shards, 1-based."""
    try:
        index, count = (int(p) for p in text.split("/"))
    except ValueError:
        raise ValueError(f"expected i/n, got {text!r}") from None
    return index, count  # 1 <= i <= n is the plan's to check (config/plan.shard)


def library_pin(text: str) -> tuple[str, str]:
    """NAME==VERSION: one release of a matrix library."""
    name, equals, version = text.partition("==")
    if not equals or not name or not version:
        raise ValueError(f"{text!r}: give NAME==VERSION (cutlass==3.7.0)")
    return name, version


def _pins(given: Sequence[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    versions: dict[str, tuple[str, ...]] = {}
    for name, version in given:
        versions[name] = (*versions.get(name, ()), version)
    return versions


def _unpin(versions: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    return [(name, version) for name, chosen in versions.items() for version in chosen]


@dataclass(frozen=True)
class RunFlag:
    """One option of a run. `field`: the `RunOptions` field it sets (None: the command reads
    it itself, or with the project: --corpus and --known-bugs join cudamatrix.toml's cases).
    `read`: one word to a value (ValueError names what is wrong), None for a switch, which
    sets the field to `sets`. A repeated flag's values become the field by `collect`, and
    the field's value becomes the flag's values again by `spread`. `job`: a plan's jobs
    carry the flag as the plan was given it; `repro`: a cell's repro carries it wherever the
    run's value is not the default. `default_said`: the default in words where it depends on
    the machine (its cores, an environment variable): the parser then holds nothing where
    the flag is not given, and `RunOptions` makes the default as the run starts.
    `section`: the heading the help lists it under (a selection's flags: which cells; a
    run's: how the cells run, unless it says another)."""

    flags: tuple[str, ...]
    help: str
    group: Group
    field: str | None
    read: Callable[[str], Any] | None = None
    sets: Any = True
    repeated: bool = False
    collect: Callable[[list[Any]], Any] = tuple
    spread: Callable[[Any], Iterable[Any]] = iter
    spell: Callable[[Any], str] = str
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    job: bool = False
    repro: bool = False
    # Why a cell's repro leaves the flag out, where it does: a flag that changes what a
    # cell does must be in its repro, so one that is not says why (a selection's flags:
    # the repro names its one cell with --cell). tests/unit/test_run_flags.py holds each
    # flag to one of the two.
    not_in_repro: str = ""
    default_said: str = ""
    section: Section | None = None

    @property
    def why_not_in_repro(self) -> str:
        """Why a cell's repro leaves the flag out ("" where it carries it)."""
        if self.repro:
            return ""
        return self.not_in_repro or ("a repro names its one cell with --cell"
                                     if self.group == "selection" else "")

    @property
    def heading(self) -> Section:
        """The section the help lists the flag under."""
        return self.section or ("cells" if self.group == "selection" else "running")

    @property
    def name(self) -> str:
        """The flag as a user types it (--cell-timeout)."""
        return self.flags[0]

    @property
    def dest(self) -> str:
        """Where argparse keeps its value (cell_timeout)."""
        return self.name.lstrip("-").replace("-", "_")

    @property
    def switch(self) -> bool:
        return self.read is None

    def parsed_default(self) -> Any:
        """What argparse holds where the flag is not given: the field's declared default for
        a single value (so that --help shows it), nothing for a switch or a repeated flag."""
        if self.switch:
            return False
        if self.repeated:
            return []
        return default(self.field) if self.field and not self.default_said else None

    def value(self, given: Any) -> tuple[bool, Any]:
        """(whether it was given, the field's value) from what argparse holds."""
        if self.switch:
            return bool(given), self.sets
        if self.repeated:
            return bool(given), self.collect(list(given or ()))
        return given is not None, given

    def words(self, value: Any, where: Callable[[Path], str] = str) -> list[str]:
        """The flag's words that give the field `value` (paths written by `where`)."""
        if self.switch:
            return [self.name] if value == self.sets else []

        def spelled(item: Any) -> str:
            return where(item) if isinstance(item, Path) else self.spell(item)

        items = list(self.spread(value)) if self.repeated else [value]
        return [word for item in items for word in (self.name, spelled(item))]


RUN_FLAGS: tuple[RunFlag, ...] = (
    # Which cells: every command that selects them (run, bisect, list, plan, validate).
    RunFlag(("--matrix",), "the matrix file (default: cudamatrix.toml's `matrix =`, else the "
            "built-in matrix with cudamatrix.toml's [matrix] on top)", "selection", None,
            read=Path, job=True),
    RunFlag(("--corpus",), "an extra folder of cases (repeatable), besides cudamatrix.toml's",
            "selection", None, read=Path, repeated=True, job=True),
    RunFlag(("--known-bugs",), "also run the tool's corpus of known CUDA bugs", "selection",
            None, job=True),
    RunFlag(("--tier",), "pr or nightly (default: the matrix's default_tier)", "selection",
            "tier", read=str, repro=True),
    RunFlag(("--toolkit",), "run only these toolkits (repeatable), e.g. 12.4", "selection",
            "toolkits", read=str, repeated=True, job=True),
    RunFlag(("--arch",), "run only these archs (repeatable), e.g. sm_90a", "selection",
            "archs", read=str, repeated=True),
    RunFlag(("--host-compiler",), "nvcc's host compilers as an axis (repeatable), e.g. g++-11 "
            "clang++-19: each nvcc cell once per compiler, in place of the tier's "
            "host_compiler list", "selection", "host_compilers", read=host_compiler,
            repeated=True, job=True),
    RunFlag(("--case",), "run only these cases", "selection", "cases", read=str, repeated=True,
            job=True),
    RunFlag(("--variant",), "run only the cases' variants of this name (repeatable)",
            "selection", "variants", read=str, repeated=True, metavar="NAME", job=True),
    RunFlag(("--cell",), "run only this cell (an id as `cudamatrix list` prints it)",
            "selection", "cell_ids", read=str, repeated=True, metavar="ID", job=True),
    RunFlag(("--shard",), "run shard i of n (1-based), e.g. 2/4", "selection", "shard",
            read=shard, spell=lambda given: f"{given[0]}/{given[1]}"),
    # How the cells run: `run` and `bisect`.
    RunFlag(("--library",), "this release of a library in place of the tier's (any release "
            "on the index, listed in the matrix or not); repeatable", "run",
            "library_versions", read=library_pin, repeated=True, collect=_pins,
            spread=_unpin, spell=lambda pin: f"{pin[0]}=={pin[1]}", metavar="NAME==VERSION",
            section="toolkits",
            not_in_repro="the cell's id names its library release"),
    RunFlag(("--out",), "report folder (default: %(default)s)", "run", "out", read=Path,
            section="output",
            not_in_repro="a repro writes to a folder of its own"),
    RunFlag(("--provider",), "where toolkits come from: wheels, docker, host or a plugin's; "
            "auto (the default): docker where an engine and the base image are ready, else "
            f"wheels; ${PROVIDER_ENV}", "run", "provider", read=str, metavar="PROVIDER",
            default_said=f"`auto` (${PROVIDER_ENV})", section="toolkits",
            not_in_repro="the repro line names the provider the run took (repro.py)"),
    RunFlag(("--containers",), "the Dockerfiles of the docker provider (default: "
            "%(default)s)", "run", "containers", read=Path, section="toolkits",
            not_in_repro="the images a container provider builds; their tags are in the record"),
    RunFlag(("--docker-flavour",), "toolkit images from PyPI wheels on a local Debian base "
            "(no registry needed), or from NVIDIA's pinned CUDA images", "run",
            "docker_flavour", read=str, choices=DOCKER_FLAVOURS, repro=True, section="toolkits"),
    RunFlag(("--cuda-compat",), "with NVIDIA's images, run on the forward-compatibility "
            "libraries (a newer toolkit on an older driver); label the runner apart", "run",
            "cuda_compat", repro=True, section="toolkits"),
    RunFlag(("--container-timeout",), "seconds a toolkit container may live (default: "
            "%(default)s)", "run", "container_timeout", read=positive_number, section="toolkits",
            not_in_repro="a limit on building an image, not on the cell"),
    RunFlag(("--jobs", "-j"), "cells run in parallel (default: the number of cores)", "run",
            "jobs", read=whole_number(1, 4096), default_said="the number of cores",
            not_in_repro="how many cells run at once; one cell is one job"),
    RunFlag(("--cache",), f"where environments are kept (default: ${CACHE_ENV} or "
            "~/.cache/cudamatrix)", "run", "cache", read=Path, repro=True,
            default_said=f"${CACHE_ENV} or ~/.cache/cudamatrix", section="toolkits"),
    RunFlag(("--cell-timeout",), "seconds one cell may take (default: %(default)s)", "run",
            "cell_timeout", read=positive_number, repro=True),
    RunFlag(("--jitify-warmup-timeout",), "seconds CuPy's one-time Jitify warm-up may take; "
            "done once per CuPy version and toolkit for the run's jitify cells, which share "
            "its time-out (default: %(default)s)", "run", "jitify_warmup_timeout",
            read=positive_number,
            not_in_repro="CuPy's one-time warm-up, shared by the run's cells"),
    RunFlag(("--cell-memory",), "address space each compiler may take (default: the "
            "machine's memory shared by --jobs, 4 to 16 GiB)", "run", "cell_memory_gib",
            read=positive_number, metavar="GIB",
            not_in_repro="a limit the repro's machine sets for itself"),
    RunFlag(("--run-timeout",), "seconds the whole run may take; cells it cannot start are "
            "reported as timeouts and left for --resume", "run", "run_timeout",
            read=positive_number,
            not_in_repro="the whole run's limit; one cell has its own"),
    RunFlag(("--resume",), "keep the cells an interrupted run in --out finished", "run",
            "resume", section="output",
            not_in_repro="a repro starts afresh"),
    RunFlag(("--always-run",), "run every cell even where nothing the last run into --out "
            "read has changed (by default that run's results stand, answered at once)", "run",
            None, section="output",
            not_in_repro="a repro always runs"),
    RunFlag(("--no-gpu",), "skip the load and run stages", "run", "gpu", sets=False,
            repro=True),
    RunFlag(("--context-per-cell",), "each cell's load and run stages in a CUDA context of "
            "its own process, not in its GPU's server (one context per GPU)", "run",
            "gpu_server", sets=False,
            not_in_repro="where the GPU stages run, not what they do"),
    RunFlag(("--no-compile-cache",), "compile every cell afresh, neither reading nor filling "
            "the cache", "run", "compile_cache", sets=False, section="compiles",
            not_in_repro="a repro compiles afresh in a folder of its own"),
    RunFlag(("--order",), "the order cells start in: the longest expected first (cost), the "
            "plan's, or the plan's reversed (a determinism check: no verdict may change)",
            "run", "order", read=str, choices=ORDERS,
            not_in_repro="the order cells start in; one cell has none"),
    RunFlag(("--retries",), "run a cell that is not what its case expects up to N times "
            "more; a cell that fails and then is as expected is flaky, every attempt recorded "
            "(default: %(default)s)", "run", "retries",
            read=whole_number(0, 5, " (a flaky cell shows in two or three)"), metavar="N",
            not_in_repro="a repro shows one attempt"),
    RunFlag(("--compile-apart",), "build each cell by itself, one nvcc per arch (by default "
            "the cells that differ only in arch share one nvcc, a -gencode each)", "run",
            "compile_together", sets=False, section="compiles",
            not_in_repro="a repro builds its one cell alone"),
    RunFlag(("--compile-cache-from",), "also take compiled cells from this cudamatrix cache "
            f"(repeatable; default ${COMPILE_CACHE_FROM_ENV}), never writing to it: a CI "
            "job's restored cache, a team's shared one", "run", "compile_cache_from",
            read=Path, repeated=True, metavar="CACHE", section="compiles",
            not_in_repro="a repro compiles afresh"),
    RunFlag(("--prebuilt",), "take compiled artifacts from an earlier run's --out folder "
            "(built on another machine) and do the load and run stages here", "run",
            "prebuilt", read=Path, repro=True, section="compiles"),
    RunFlag(("--compile-here",), "with --prebuilt, frontends still compiled on this machine "
            f"(repeatable; default: {', '.join(default('compile_here'))})", "run",
            "compile_here", read=str, repeated=True, metavar="FRONTEND", section="compiles",
            not_in_repro="with --prebuilt only, which the repro carries"),
    RunFlag(("--runner-label",), "the driver/runner label this machine was promised "
            f"(${RUNNER_LABEL_ENV})", "run", "runner_label", read=str,
            default_said=f"${RUNNER_LABEL_ENV}",
            not_in_repro="the machine the repro runs on says its own"),
)

# The RunOptions fields no flag sets by itself: cudamatrix.toml's, read with the project
# beside --matrix, --corpus and --known-bugs (commands/selection.py), and bisect's own.
SET_ELSEWHERE = frozenset({"matrix", "matrix_overrides", "overrides_file", "corpus", "paths",
                           "project_override"})


_BY_FIELD = {flag.field: flag for flag in RUN_FLAGS if flag.field}


def flag_for(field: str) -> RunFlag:
    """The flag that sets `field` of RunOptions (looked up once a word: a report's repro
    lines ask it several times for each of 10,000 cells)."""
    try:
        return _BY_FIELD[field]
    except KeyError:
        raise KeyError(f"no flag sets the run option {field!r}") from None


def words_for(field: str, value: Any) -> list[str]:
    """The words that give `field` this value (a report's repro adds the cell's toolkit,
    arch, library release and host compiler with them)."""
    return flag_for(field).words(value)


def job_words(given: Mapping[str, Any]) -> list[str]:
    """The words that narrow each job of a plan as the plan's own arguments (`given`, as
    argparse holds them) narrowed it: every flag declared `job`."""
    words: list[str] = []
    for flag in RUN_FLAGS:
        if flag.job and flag.dest in given:
            said, value = flag.value(given[flag.dest])
            if said:
                words += flag.words(value)
    return words


def repro_arguments(options: RunOptions, folder: Path) -> list[str]:
    """The words of `cudamatrix run` that decide a cell the way this run decided it, to be
    run from `folder`: every corpus folder (relative to `folder` where inside it; the
    project's own too, which a run from there reads once), the known bugs, the matrix, then
    every flag declared `repro` whose value is not the default. The provider the run settled
    on, and the cell's own toolkit, arch, library version and host compiler, are the
    report's to add (it knows them; --provider auto may choose otherwise next time)."""
    def where(path: Path) -> str:
        absolute = path if path.is_absolute() else folder / path
        try:
            return str(absolute.resolve().relative_to(folder.resolve())) or "."
        except ValueError:
            return str(absolute.resolve())

    words: list[str] = []
    for corpus in options.corpus:
        words += ["--known-bugs"] if corpus == KNOWN_BUGS else ["--corpus", where(corpus)]
    if options.matrix != DEFAULT_MATRIX and not options.matrix_overrides:
        words += ["--matrix", where(options.matrix)]  # a project's own is read from there
    for flag in RUN_FLAGS:
        if flag.repro and flag.field:
            value = getattr(options, flag.field)
            if value != default(flag.field):
                words += flag.words(value, where)
    return words
