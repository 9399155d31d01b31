"""Each option of a run declared once, with the `RunOptions` field it sets (as nox's and
attrs' options carry their flag: config/options.py), and here the few flags no field holds:
the flag, its help, how one word is read, and whether a plan's jobs and a cell's repro
command carry it. From RUN_FLAGS, made of both, come the parsers of `run`,
`bisect`, `list`, `plan` and `validate` (commands/arguments.py), the `RunOptions` their
arguments make (commands/selection.py), the words of a repro (`repro_arguments`) and of a
plan's job (`job_words`), which `merge --plan` reads back with the same parser. A flag
spelled anywhere else is a second declaration: `words_for` spells a field's flag."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from .defaults import DEFAULT_MATRIX, KNOWN_BUGS
from .flags import Group, RunFlag
from .options import FLAG, RunOptions, default

# The flags no RunOptions field holds: the project's (read with cudamatrix.toml) and the
# run command's own.
UNHELD_SELECTION: tuple[RunFlag, ...] = (
    RunFlag(("--matrix",), "the matrix file (default: cudamatrix.toml's `matrix =`, else the "
            "built-in matrix with cudamatrix.toml's [matrix] on top)", "selection", None,
            read=Path, job=True),
    RunFlag(("--corpus",), "an extra folder of cases (repeatable), besides cudamatrix.toml's",
            "selection", None, read=Path, repeated=True, job=True),
    RunFlag(("--known-bugs",), "also run the tool's corpus of known CUDA bugs", "selection",
            None, job=True),
)
UNHELD_RUN: tuple[RunFlag, ...] = (
    RunFlag(("--always-run",), "run every cell even where nothing the last run into --out "
            "read has changed (by default that run's results stand, answered at once)", "run",
            None, section="output",
            not_in_repro="a repro always runs: it compiles afresh (--no-compile-cache), "
                         "which no earlier run stands for"),
)


def _held(group: Group) -> list[RunFlag]:
    """The flags declared on RunOptions' fields (config/options.py), each told its field."""
    return [replace(f.metadata[FLAG], field=f.name) for f in fields(RunOptions)
            if FLAG in f.metadata and f.metadata[FLAG].group == group]


# Every flag of a run: a selection's first (which cells), then how they run.
RUN_FLAGS: tuple[RunFlag, ...] = (*UNHELD_SELECTION, *_held("selection"), *_held("run"),
                                  *UNHELD_RUN)

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


def named_from(path: Path, root: Path, home: Path | None) -> str:
    """An absolute `path` as a repro names it, to be run from the project's root `root` on
    any machine: inside the root, relative to it (`cases`); else, under `home` (the home
    folder of the machine that ran: a CI runner's /home/runner), from `~`
    (`~/work/_temp/cache`, which the reader's shell reads as their own home); else as it is
    (`/opt/cases` names the same folder wherever it exists). A report named
    `--corpus /home/runner/work/p/p/cases`, a folder no reader has. A name, not a check
    of where a path may lead: nothing is read through it here."""
    for base, from_home in ((root, False), (home, True)):
        if base is None:
            continue
        try:
            rest = str(path.relative_to(base))
        except ValueError:
            continue
        if from_home:
            return str(Path("~", rest))
        # A folder of the project named `~...` is never read as a home (repro_line).
        return f"./{rest}" if rest.startswith("~") else rest
    return str(path)


def repro_arguments(options: RunOptions, root: Path, home: Path | None = None) -> list[str]:
    """The words of `cudamatrix run` that decide a cell the way this run decided it, to be
    run from the project's root `root`: every corpus folder (the project's own too, which a
    run from there reads once), the known bugs, the matrix, then every flag declared `repro`
    whose value is not the default, each path (relative ones are the run's, from where it
    ran) resolved and named from the root (`named_from`; `home`: the home folder of the
    machine that ran, this one's where none is given). The provider the run settled on,
    and the cell's own toolkit, arch, library version and host compiler, are the report's
    to add (it knows them; --provider auto may choose otherwise next time), and the words
    every repro has whatever the run had (a folder of its own, a compile afresh)
    config/repro_line's."""
    root, home = root.resolve(), (home or Path.home()).resolve()

    def where(path: Path) -> str:
        return named_from(path.resolve(), root, home)

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


def parsed_default(flag: RunFlag) -> Any:
    """What argparse holds where the flag is not given: the field's declared default for a
    single value (so that --help shows it), nothing for a switch or a repeated flag."""
    if flag.switch:
        return False
    if flag.repeated:
        return []
    return default(flag.field) if flag.field and not flag.default_words else None
