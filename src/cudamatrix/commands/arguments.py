"""The arguments several commands share (a cell selection, a run's options, a baseline,
history) and the types that check a value as it is parsed: each refuses a bad value by
name, before any work."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator
from pathlib import Path

from ..common.versions import HOST_COMPILER
from ..config.defaults import DEFAULT_HISTORY_RUNS as DEFAULT_RUNS
from ..config.options import (
    CACHE_ENV,
    COMPILE_CACHE_FROM_ENV,
    DOCKER_FLAVOURS,
    PROVIDER_ENV,
    RUNNER_LABEL_ENV,
    default,
)


class ProviderChoices:
    """--provider's choices: "auto" and the provider registry's names, read only when a
    value is checked or the help printed (the registry imports every provider, which
    `cudamatrix --version` and a warm run's start should not wait for)."""

    def names(self) -> tuple[str, ...]:
        from ..providers.toolkits import toolkit_providers

        return ("auto", *toolkit_providers())

    def __contains__(self, value: object) -> bool:
        return value in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def _runs(text: str) -> int:
    """How many runs history.json keeps: 1 (this one) to 10,000."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"must be 1 to 10000 (this run and earlier ones), "
                                         f"got {text!r}")
    return value


def _retries(text: str) -> int:
    """How many times more a cell may be run: 0 to 5 (a flaky cell shows in two or three;
    more only hides a broken one behind its retries)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value <= 5:
        raise argparse.ArgumentTypeError(f"must be 0 to 5, got {text!r}")
    return value


def positive_number(text: str) -> float:
    """A positive, finite number (seconds, GiB): nan, inf and 0 are refused by name."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return value


def _host_compiler(text: str) -> str:
    """A host compiler program name (g++-11, clang++-19), refused by name otherwise."""
    if not HOST_COMPILER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a host compiler program "
                                         "(g++, g++-12, clang++-19)")
    return text


def _shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(p) for p in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected i/n, got {text!r}") from None
    return index, count


def add_selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matrix", type=Path, default=None,
                        help="the matrix file (default: cudamatrix.toml's `matrix =`, else "
                             "the built-in matrix with cudamatrix.toml's [matrix] on top)")
    parser.add_argument("--corpus", type=Path, action="append", default=[],
                        help="an extra folder of cases (repeatable), besides cudamatrix.toml's")
    parser.add_argument("--known-bugs", action="store_true",
                        help="also run the tool's corpus of known CUDA bugs")
    parser.add_argument("--tier", help="pr or nightly (default: the matrix's default_tier)")
    parser.add_argument("--toolkit", action="append", default=[],
                        help="run only these toolkits (repeatable), e.g. 12.4")
    parser.add_argument("--arch", action="append", default=[],
                        help="run only these archs (repeatable), e.g. sm_90a")
    parser.add_argument("--host-compiler", action="append", default=[], type=_host_compiler,
                        help="nvcc's host compilers as an axis (repeatable), e.g. g++-11 "
                             "clang++-19: each nvcc cell once per compiler, in place of the "
                             "tier's host_compiler list")
    parser.add_argument("--case", action="append", default=[], help="run only these cases")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME",
                        help="run only the cases' variants of this name (repeatable)")
    parser.add_argument("--cell", action="append", default=[], metavar="ID",
                        help="run only this cell (an id as `cudamatrix list` prints it)")
    parser.add_argument("--shard", type=_shard, help="run shard i of n (1-based), e.g. 2/4")


def _library_pin(text: str) -> tuple[str, str]:
    name, equals, version = text.partition("==")
    if not equals or not name or not version:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME==VERSION (cutlass==3.7.0)")
    return name, version


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """What a run takes: the selection, where it writes, how it runs its cells."""
    add_selection(run)
    run.add_argument("--library", action="append", default=[], type=_library_pin,
                     metavar="NAME==VERSION",
                     help="this release of a library in place of the tier's (any release "
                          "on the index, listed in the matrix or not); repeatable")
    run.add_argument("--out", type=Path, default=default("out"),
                     help="report folder (default: %(default)s)")
    # A metavar, so that argparse does not list the choices (importing every provider) each
    # time the parser is made; a value given is checked against them.
    run.add_argument("--provider", choices=ProviderChoices(), metavar="PROVIDER",
                     default=default("provider"),
                     help="where toolkits come from: wheels, docker, host or a plugin's; auto "
                          "(the default): docker where an engine and the base image are "
                          f"ready, else wheels; ${PROVIDER_ENV}")
    run.add_argument("--containers", type=Path, default=default("containers"),
                     help="the Dockerfiles of the docker provider (default: %(default)s)")
    run.add_argument("--docker-flavour", choices=DOCKER_FLAVOURS,
                     default=default("docker_flavour"),
                     help="toolkit images from PyPI wheels on a local Debian base (no registry "
                          "needed), or from NVIDIA's pinned CUDA images")
    run.add_argument("--cuda-compat", action="store_true",
                     help="with NVIDIA's images, run on the forward-compatibility libraries "
                          "(a newer toolkit on an older driver); label the runner apart")
    run.add_argument("--container-timeout", type=positive_number,
                     default=default("container_timeout"),
                     help="seconds a toolkit container may live (default: %(default)s)")
    run.add_argument("--jobs", "-j", type=int, default=default("jobs"),
                     help="cells run in parallel (default: the number of cores)")
    run.add_argument("--cache", type=Path, default=None, help="where environments are kept "
                     f"(default: ${CACHE_ENV} or ~/.cache/cudamatrix)")
    run.add_argument("--cell-timeout", type=positive_number, default=default("cell_timeout"),
                     help="seconds one cell may take (default: %(default)s)")
    run.add_argument("--jitify-warmup-timeout", type=positive_number,
                     default=default("jitify_warmup_timeout"),
                     help="seconds CuPy's one-time Jitify warm-up may take; done once per "
                          "CuPy version and toolkit for the run's jitify cells, which share "
                          "its time-out (default: %(default)s)")
    run.add_argument("--cell-memory", type=positive_number, default=None, metavar="GIB",
                     help="address space each compiler may take (default: the machine's "
                          "memory shared by --jobs, 4 to 16 GiB)")
    run.add_argument("--run-timeout", type=positive_number, default=None,
                     help="seconds the whole run may take; cells it cannot start are reported "
                          "as timeouts and left for --resume")
    run.add_argument("--resume", action="store_true",
                     help="keep the cells an interrupted run in --out finished")
    run.add_argument("--always-run", action="store_true",
                     help="run every cell even where nothing the last run into --out read "
                          "has changed (by default that run's results stand, answered at once)")
    run.add_argument("--no-gpu", action="store_true", help="skip the load and run stages")
    run.add_argument("--context-per-cell", action="store_true",
                     help="each cell's load and run stages in a CUDA context of its own "
                          "process, not in its GPU's server (one context per GPU)")
    run.add_argument("--no-compile-cache", action="store_true",
                     help="compile every cell afresh, neither reading nor filling the cache")
    run.add_argument("--order", choices=("cost", "plan", "reversed"), default="cost",
                     help="the order cells start in: the longest expected first (cost), "
                     "the plan's, or the plan's reversed (a determinism check: no verdict "
                     "may change)")
    run.add_argument("--retries", type=_retries, default=default("retries"), metavar="N",
                     help="run a cell that is not what its case expects up to N times more; "
                          "a cell whose attempts disagree is flaky, every attempt recorded "
                          "(default: %(default)s)")
    run.add_argument("--compile-apart", action="store_true",
                     help="build each cell by itself, one nvcc per arch (by default the "
                          "cells that differ only in arch share one nvcc, a -gencode each)")
    run.add_argument("--compile-cache-from", type=Path, action="append", metavar="CACHE",
                     help="also take compiled cells from this cudamatrix cache (repeatable; "
                          f"default ${COMPILE_CACHE_FROM_ENV}), never writing to it: a CI "
                          "job's restored cache, a team's shared one")
    run.add_argument("--prebuilt", type=Path,
                     help="take compiled artifacts from an earlier run's --out folder (built on "
                          "another machine) and do the load and run stages here")
    run.add_argument("--compile-here", action="append", default=None, metavar="FRONTEND",
                     help="with --prebuilt, frontends still compiled on this machine "
                          f"(repeatable; default: {', '.join(default('compile_here'))})")
    run.add_argument("--runner-label", default=default("runner_label"),
                     help="the driver/runner label this machine was promised "
                          f"(${RUNNER_LABEL_ENV})")


def add_history(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--history", type=Path, action="append", default=[], metavar="PATH",
                        help="earlier runs to keep beside this one (a history.json, a "
                             "results.json, or a folder with either; repeatable): the page "
                             "shows each cell's recent outcomes and where it flipped")
    parser.add_argument("--history-runs", type=_runs, default=DEFAULT_RUNS, metavar="N",
                        help=f"how many runs history.json keeps (default {DEFAULT_RUNS})")


def add_baseline(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", type=Path,
                        help="an earlier results.json: list new failures, fixes, flips and "
                             "added/removed cells, and fail only on new failures")
    parser.add_argument("--fail-on", choices=("any", "new", "never"), default=None,
                        help="what makes the exit status 1: any failed or erred cell, only "
                             "new failures against --baseline, or never once the record is "
                             "written (a CI shard: the merge judges) (default: new with "
                             "--baseline, else any)")
    parser.add_argument("--allow-new-failures", action="store_true",
                        help="the same as --fail-on never")
