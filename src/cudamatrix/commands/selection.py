"""The run options and the cases a command's arguments select, with cudamatrix.toml's
project around them (its cases, matrix, overrides and paths)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.defaults import CONFIG, KNOWN_BUGS
from ..config.options import PROVIDER_ENV, RunOptions, default
from ..errors import UserError

if TYPE_CHECKING:
    from ..config.corpus import Case


def options_from(args: argparse.Namespace, **extra: object) -> RunOptions:
    from ..config.project import find_project

    project = find_project(Path.cwd())
    corpus = (*project.cases, *args.corpus)
    if args.known_bugs or project.known_bugs:
        corpus = (*corpus, KNOWN_BUGS)
    # A folder named twice (cudamatrix.toml's and --corpus) is read once.
    corpus = tuple({p.resolve(): p for p in corpus}.values())
    if not corpus:
        raise UserError(f"no cases to run: no {CONFIG} in {Path.cwd()} or above "
                        "(`cudamatrix init` writes one), no --corpus DIR, no --known-bugs")
    values: dict[str, object] = dict(
        matrix=args.matrix or project.matrix,
        matrix_overrides={} if args.matrix else project.overrides,
        overrides_file=None if args.matrix else project.config, corpus=corpus,
        tier=args.tier, toolkits=tuple(args.toolkit),
        archs=tuple(args.arch), cases=tuple(args.case), variants=tuple(args.variant),
        cell_ids=tuple(args.cell),
        host_compilers=tuple(args.host_compiler),
        shard=args.shard, paths=project.paths)
    values.update(extra)
    return RunOptions(**values)  # type: ignore[arg-type]


def cases_here(args: argparse.Namespace) -> dict[str, Case]:
    """The cases a run would load here: the project's, --corpus and the known bugs; none
    where none is named (a merge needs cases only to judge max_slowdown across shards)."""
    from ..config.corpus import load_corpus
    from ..config.project import find_project

    project = find_project(Path.cwd())
    folders = (*project.cases, *args.corpus, *((KNOWN_BUGS,) if args.known_bugs
                                                or project.known_bugs else ()))
    return {case.id: case for case in load_corpus(folders, project.paths)} if folders else {}


def run_options(args: argparse.Namespace) -> RunOptions:
    """`cudamatrix run`'s options from its arguments (each default from options.py)."""
    from .arguments import ProviderChoices

    known = ProviderChoices()
    if args.provider not in known:  # argparse checks a given value, never its default
        said = f"${PROVIDER_ENV}" if os.environ.get(PROVIDER_ENV) == args.provider \
            else "--provider"
        raise UserError(f"{said} {str(args.provider)[:60]!r}: no such provider (known: "
                        f"{', '.join(known.names())})")
    extra: dict[str, object] = dict(
        out=args.out, provider=args.provider, jobs=args.jobs, cell_timeout=args.cell_timeout,
        cell_memory_gib=args.cell_memory,
        run_timeout=args.run_timeout, resume=args.resume, gpu=not args.no_gpu,
        gpu_server=not getattr(args, "context_per_cell", False),
        runner_label=args.runner_label,
        prebuilt=args.prebuilt, compile_cache=not args.no_compile_cache,
        compile_together=not args.compile_apart, order=args.order,
        compile_here=tuple(args.compile_here or default("compile_here")),
        containers=args.containers, docker_flavour=args.docker_flavour,
        container_timeout=args.container_timeout, cuda_compat=args.cuda_compat,
        jitify_warmup_timeout=args.jitify_warmup_timeout, retries=args.retries)
    if args.cache:
        extra["cache"] = args.cache
    if args.compile_cache_from:
        extra["compile_cache_from"] = tuple(args.compile_cache_from)
    versions: dict[str, list[str]] = {}
    for name, version in args.library:
        versions.setdefault(name, []).append(version)
    if not versions:
        return options_from(args, **extra)
    from ..config.planning import with_library_versions

    return with_library_versions(options_from(args, **extra), versions)
