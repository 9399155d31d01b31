"""The run options and the cases a command's arguments select, with cudamatrix.toml's
project around them (its cases, matrix, overrides and paths)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.defaults import CONFIG, KNOWN_BUGS
from ..config.options import PROVIDER_ENV, RunOptions
from ..config.run_flags import RUN_FLAGS
from ..errors import UserError

if TYPE_CHECKING:
    from ..config.corpus import Case


def options_from(args: argparse.Namespace, **extra: object) -> RunOptions:
    """The run options a command's arguments make: cudamatrix.toml's project (its cases,
    matrix, overrides, paths) with --matrix, --corpus and --known-bugs, then every declared
    flag the command took that was given (run_flags.RUN_FLAGS), then `extra`."""
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
        paths=project.paths)
    for flag in RUN_FLAGS:
        if flag.field and hasattr(args, flag.dest):
            given, value = flag.value(getattr(args, flag.dest))
            if given:
                values[flag.field] = value
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
    # A folder named twice (cudamatrix.toml's and --corpus) is read once, as a run reads it.
    folders = tuple({p.resolve(): p for p in folders}.values())
    return {case.id: case for case in load_corpus(folders, project.paths)} if folders else {}


def run_options(args: argparse.Namespace) -> RunOptions:
    """`cudamatrix run`'s options from its arguments, its provider checked: argparse checks a
    value given, never the default, which $CUDAMATRIX_PROVIDER may set."""
    from .arguments import ProviderChoices

    options = options_from(args)
    known = ProviderChoices()
    if options.provider not in known:
        said = "--provider" if args.provider is not None else f"${PROVIDER_ENV}"
        raise UserError(f"{said} {str(options.provider)[:60]!r}: no such provider (known: "
                        f"{', '.join(known.names())})")
    return options
