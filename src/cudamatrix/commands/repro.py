"""`cudamatrix repro`: a cell's compile as a shell script that runs outside the tool,
from its record (cells/ while a run goes on, else results.json)."""

from __future__ import annotations

import argparse
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


def _one_program(line: str) -> bool:
    """Whether a logged line is one compiler's command as the tool writes it (shlex-quoted,
    an optional LD_LIBRARY_PATH first): pasted, it runs that program and nothing else."""
    try:
        words = shlex.split(line)
    except ValueError:
        return False
    if shlex.join(words) != line or not words:
        return False
    if words[0].startswith("LD_LIBRARY_PATH="):
        words = words[1:]
    if not words or not os.path.isabs(words[0]) \
            or _COMPILERS.search(os.path.basename(words[0])) is None:
        return False
    # Python only as the NVRTC driver the tool ships.
    return not os.path.basename(words[0]).startswith("python") \
        or words[1:3] == ["-m", "cudamatrix.stages.compile.nvrtc"]


def compile_script(result: CellResult, out: Path) -> str:
    """A cell's compile as a shell script: each command its compile stage ran, as its log
    shows it (the compiler by its path, every flag, LD_LIBRARY_PATH where NVRTC needs it),
    run in the cell's folder of the run's artifacts, where the compile ran."""
    from ..config.plan import cell_slug
    from ..record.results import ARTIFACTS_DIR

    compile_stage = next((s for s in result.stages if s.stage == "compile"), None)
    lines = [line[2:] for line in (compile_stage.log if compile_stage else "").splitlines()
             if line.startswith("$ ")]
    if not lines:
        raise UserError(f"cell {result.cell.id}: its compile stage logged no command "
                        "(a build case's commands are in its log; a CuPy cell compiles "
                        "through the driver)")
    from ..stages.frontends import frontend

    if frontend(result.cell.frontend).builds_project:
        raise UserError(f"cell {result.cell.id}: a build case runs its own commands (they are "
                        "in its log); its repro is the report's `cudamatrix run ... --cell` line")
    for line in lines:
        if not _one_program(line):
            raise UserError(f"cell {result.cell.id}: its log's command {line[:80]!r} is not one "
                            "compiler's plain command line: not printed as a script (a record "
                            "from elsewhere may hold anything)")
    folder = (out / ARTIFACTS_DIR / cell_slug(result.cell.id)).resolve()
    return "\n".join([
        "#!/bin/sh",
        f"# {result.cell.id}: its compile, as the run into {out} ran it "
        f"({result.outcome} at {result.stage})",
        "set -e",
        f"mkdir -p {shlex.quote(str(folder))}",
        f"cd {shlex.quote(str(folder))}",
        *(f"mkdir -p {shlex.quote(made)}" for made in dict.fromkeys(
            f for line in lines for f in _output_folders(line))),
        *lines, ""])


def _repro(args: argparse.Namespace, invocation: Invocation) -> int:
    print(compile_script(_recorded_cell(args.out, args.cell), args.out), end="")
    return 0


def _arguments(repro: argparse.ArgumentParser) -> None:
    repro.add_argument("cell", metavar="ID", help="the cell's id, as the report names it")
    repro.add_argument("--out", type=Path, default=Path("reports/latest"),
                       help="the run's --out folder (its results.json)")


COMMAND = Command("repro", "a shell script that runs a cell's compile again, outside the tool",
                  _arguments, _repro)
