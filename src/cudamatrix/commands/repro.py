"""`cudamatrix repro`: a cell's compile as a shell script that runs outside the tool,
from its record (cells/ while a run goes on, else results.json)."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from .command import Command, Invocation

if TYPE_CHECKING:
    from ..record.results import CellResult
    from ..stages.cell.result import StageResult


def _recorded_cell(out: Path, cell_id: str) -> CellResult:
    """A cell's record in `out`: its own file in cells/ (written as it finished, so a run
    still going has it), else the run's results.json."""
    from ..config.plan import cell_slug
    from ..record.results import CELLS_DIR, load_cell, load_results

    own = out / CELLS_DIR / f"{cell_slug(cell_id)}.json"
    if own.is_file():
        return load_cell(own)
    if not (out / "results.json").exists():
        raise UserError(f"{out}: no record of cell {cell_id!r} (neither cells/ nor "
                        "results.json has it)")
    _, results = load_results(out / "results.json")
    found = next((r for r in results if r.cell.id == cell_id), None)
    if found is None:
        raise UserError(f"{out / 'results.json'}: no cell {cell_id!r}")
    return found


# The options whose value is a file a compile writes: its folder must exist.
_OUTPUT_OPTIONS = ("-o", "-MF", "--output-file", "-odir", "--output-directory")


def _output_folders(command: str) -> list[str]:
    """The folders a logged command writes into (-o FILE, -MF FILE): a repro makes them,
    so the line runs as printed after the run removed them (a together-compiled group's
    folder)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    found = []
    for option, value in itertools.pairwise(words):
        if option in _OUTPUT_OPTIONS and value:
            folder = value if option in ("-odir", "--output-directory") \
                else os.path.dirname(value)
            if folder:
                found.append(folder)
    return list(dict.fromkeys(found))


# The programs a cell's compile runs, as its log names them by path.
_COMPILERS = re.compile(r"(nvcc|ptxas|clang(\+\+)?(-\d+)?|python[\d.]*)$")
# Compiler options that make a compiler run a program of their naming (gcc's -wrapper and
# -B, a plugin, a specs file, a linker by path, another host compiler): a record from
# elsewhere may hold them, a repro never prints them. Checked on every word and on each
# piece of a comma list (nvcc's -Xcompiler a,b and --opt=a,b split as nvcc splits them).
_RUNS_A_PROGRAM = re.compile(
    r"^(-wrapper|-B|--?specs|-fplugin|-iplugindir|-fuse-ld|--plugin|-plugin|"
    r"--compiler-bindir|-ccbin|--?dependency-output-prefix)")
_HOST_COMPILER = re.compile(r"^(g\+\+|gcc|clang\+\+|clang)(-\d+)?$")


def _pieces(word: str) -> list[str]:
    """A word as the compilers read it: itself, an option's value after '=', and each piece
    of a comma list (nvcc splits -Xcompiler a,b and --pre-include=a,b; gcc splits -Wl,a,b)."""
    found = [word]
    for piece in re.split(r"[=,]", word):
        found.append(piece)
    return found


def _programs_allowed() -> list[str]:
    """Where a repro's programs may live: a toolkit this machine's cudamatrix made (its
    cache), the system's (/usr, /opt), and this Python's own installation."""
    import sys

    from ..config.options import default_cache

    cache = default_cache()
    roots = [cache, Path("/usr"), Path("/opt"), Path(sys.prefix), Path(sys.base_prefix)]
    # A cache's folders may be links to a shared one (a team's, a CI's restored cache).
    with contextlib.suppress(OSError):
        roots += [entry for entry in cache.iterdir() if entry.is_symlink()]
    return [os.path.realpath(root) for root in roots]


def _inside_any(path: str, roots: list[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)


def _one_program(line: str) -> list[str] | None:
    """A logged line as the words a repro runs, where it is one compiler's command as the
    tool writes it (shlex-quoted, an optional LD_LIBRARY_PATH first), the compiler a
    toolkit's or the system's, no option that runs another program; else None. The NVRTC
    driver runs on this tool's own Python with -P, so the folder it runs in can plant no
    module (python -m would import ./cudamatrix first)."""
    import sys

    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if shlex.join(words) != line or not words:
        return None
    roots = _programs_allowed()
    prefix: list[str] = []
    if words[0].startswith("LD_LIBRARY_PATH="):
        folders = words[0].partition("=")[2].split(":")
        if not all(os.path.isabs(f) and _inside_any(f, roots) for f in folders):
            return None
        prefix, words = [words[0]], words[1:]
    if not words or not os.path.isabs(words[0]) \
            or _COMPILERS.search(os.path.basename(words[0])) is None:
        return None
    if os.path.basename(words[0]).startswith("python"):
        if words[1:3] != ["-m", "cudamatrix.stages.compile.nvrtc"]:
            return None  # Python only as the NVRTC driver the tool ships
        words = [sys.executable, "-P", *words[1:]]
    elif not _inside_any(words[0], roots):
        return None
    for before, word in itertools.pairwise(["", *words[1:]]):
        if before in ("-ccbin", "--compiler-bindir"):
            # A host compiler by name (found on PATH), or by its path on the system.
            if not _HOST_COMPILER.match(os.path.basename(word)) or (
                    os.path.isabs(word) and not _inside_any(word, roots)) or (
                    not os.path.isabs(word) and "/" in word):
                return None
            continue
        if any(_RUNS_A_PROGRAM.match(piece) for piece in _pieces(word)) and word not in (
                "-ccbin", "--compiler-bindir"):
            return None
    return [*prefix, *words]


def _said(text: str) -> str:
    """A record's value as a comment may hold it: one line, nothing a terminal acts on."""
    return "".join(c if c.isprintable() else "?" for c in text)


# A variable's name as a build's environment may hold it (the case's `env`, the tool's).
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def build_script(result: CellResult, stage: StageResult | None) -> str:
    """A build cell's build as a shell script: a fresh copy of the project, the environment
    the tool gave the build (its toolkit as $CUDA_HOME, its arch, its tools on PATH), then
    each command as the words the tool ran (every placeholder filled, no shell between)."""
    details = stage.details if stage is not None else {}
    project, commands = details.get("project_path"), details.get("command_words")
    environment = details.get("environment") or {}
    if not isinstance(project, str) or not isinstance(commands, list) or not all(
            isinstance(c, list) and all(isinstance(w, str) for w in c) for c in commands) \
            or not isinstance(environment, dict):
        raise UserError(f"cell {_said(result.cell.id)!r}: its record keeps no build to repeat "
                        "(a record made before `repro` rebuilt builds, or from elsewhere); "
                        "the report's `cudamatrix run ... --cell` line runs it again")
    exported = []
    for name, value in sorted(environment.items()):
        if not _NAME.fullmatch(str(name)) or not isinstance(value, str):
            raise UserError(f"cell {_said(result.cell.id)!r}: its record's build environment "
                            f"holds {_said(str(name)[:40])!r}, no variable's name")
        exported.append(f"export {name}={shlex.quote(value)}")
    return "\n".join([
        "#!/bin/sh",
        _said(f"# {result.cell.id}: its build, as the run ran it ({result.outcome} at "
              f"{result.stage}), in a fresh copy of {project}"),
        "# It runs the case's own build commands: read them first where the record is not "
        "your own.",
        "set -e",
        'work="$(mktemp -d)"',
        f'cp -R {shlex.quote(project)} "$work/project"',
        'cd "$work/project"',
        'echo "building in $work/project" >&2',
        *exported,
        *(shlex.join(words) for words in commands), ""])


def compile_script(result: CellResult, out: Path) -> str:
    """A cell's compile as a shell script: each command its compile stage ran, as its log
    shows it (the compiler by its path, every flag, LD_LIBRARY_PATH where NVRTC needs it),
    run in the cell's folder of the run's artifacts, where the compile ran."""
    from ..config.plan import cell_slug
    from ..record.results import ARTIFACTS_DIR

    compile_stage = next((s for s in result.stages if s.stage == "compile"), None)
    from ..stages.frontends import frontend

    try:
        builds_project = frontend(result.cell.frontend).builds_project
    except (KeyError, UserError):
        raise UserError(f"cell {_said(result.cell.id)!r}: its record names frontend "
                        f"{_said(result.cell.frontend)!r}, which this cudamatrix does not "
                        "have: not printed as a script") from None
    if builds_project:
        return build_script(result, compile_stage)
    lines = [line[2:] for line in (compile_stage.log if compile_stage else "").splitlines()
             if line.startswith("$ ")]
    if not lines:
        raise UserError(f"cell {_said(result.cell.id)!r}: its compile stage logged no command "
                        "(a CuPy cell compiles through the driver)")
    commands = []
    for line in lines:
        words = _one_program(line)
        if words is None:
            raise UserError(f"cell {_said(result.cell.id)!r}: its log's command "
                            f"{_said(line[:80])!r} is not one compiler's plain command line "
                            "(a toolkit's, running no other program): not printed as a script "
                            "(a record from elsewhere may hold anything)")
        commands.append(shlex.join(words))
    folder = (out / ARTIFACTS_DIR / cell_slug(result.cell.id)).resolve()
    return "\n".join([
        "#!/bin/sh",
        _said(f"# {result.cell.id}: its compile, as the run into {out} ran it "
              f"({result.outcome} at {result.stage})"),
        "set -e",
        f"mkdir -p {shlex.quote(str(folder))}",
        f"cd {shlex.quote(str(folder))}",
        *(f"mkdir -p {shlex.quote(made)}" for made in dict.fromkeys(
            f for line in commands for f in _output_folders(line))),
        *commands, ""])


def _repro(args: argparse.Namespace, invocation: Invocation) -> int:
    print(compile_script(_recorded_cell(args.out, args.cell), args.out), end="")
    return 0


def _arguments(repro: argparse.ArgumentParser) -> None:
    repro.add_argument("cell", metavar="ID", help="the cell's id, as the report names it")
    repro.add_argument("--out", type=Path, default=Path("reports/latest"),
                       help="the run's --out folder (its results.json)")


COMMAND = Command("repro", "a shell script that runs a cell's compile (a build cell's whole "
                  "build) again, outside the tool",
                  _arguments, _repro)
