"""`cudamatrix repro`: a cell's compile as a shell script that runs outside the tool,
from its record (cells/ while a run goes on, else results.json)."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.log_line import log_line, say_lines
from ..errors import UserError
from .arguments import add_flag
from .command import Command, Invocation

if TYPE_CHECKING:
    from ..config.corpus import Case, Variant
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


# The programs a cell's compile runs, as its log names them by path.
_COMPILERS = re.compile(r"(nvcc|ptxas|clang(\+\+)?(-\d+)?|python[\d.]*)$")
# Compiler options that make a compiler run a program of their naming (gcc's -wrapper and
# -B, a plugin, a specs file, a linker by path, another host compiler): a record from
# elsewhere may hold them, a repro never prints them. Checked on every word and on each
# piece of a comma list (nvcc's -Xcompiler a,b and --opt=a,b split as nvcc splits them);
# nvcc's --run runs what it built.
_RUNS_A_PROGRAM = re.compile(
    r"^(-wrapper|-B|--?specs|-fplugin|-iplugindir|-fuse-ld|--plugin|-plugin|"
    r"--compiler-bindir|-ccbin|--?dependency-output-prefix|--?run(-args)?(=|$))")
_HOST_COMPILER = re.compile(r"^(g\+\+|gcc|clang\+\+|clang)(-\d+)?$")


def _pieces(word: str) -> list[str]:
    """A word as the compilers read it: itself, an option's value after '=', and each piece
    of a comma list (nvcc splits -Xcompiler a,b and --pre-include=a,b; gcc splits -Wl,a,b)."""
    found = [word]
    for piece in re.split(r"[=,]", word):
        found.append(piece)
    return found


def _programs_allowed(cache: Path) -> list[str]:
    """Where a repro's programs may live: a toolkit this machine's cudamatrix made (`cache`,
    the run's --cache), the system's (/usr, /opt), and this Python's own installation."""
    import sys

    roots = [cache, Path("/usr"), Path("/opt"), Path(sys.prefix), Path(sys.base_prefix)]
    # A cache's folders may be links to a shared one (a team's, a CI's restored cache).
    with contextlib.suppress(OSError):
        roots += [entry for entry in cache.iterdir() if entry.is_symlink()]
    return [os.path.realpath(root) for root in roots]


def _inside_any(path: str, roots: list[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)


def _one_program(line: str, roots: list[str]) -> list[str] | None:
    """A logged line as the words a repro runs, where it is one compiler's command as the
    tool writes it (shlex-quoted, an optional LD_LIBRARY_PATH first), the compiler a
    toolkit's or the system's (under `roots`), or a host compiler by its name as a torch
    extension's build runs it (`g++`, found on PATH, as nvcc's -ccbin names one), no option
    that runs another program; else None. The NVRTC
    driver runs on this tool's own Python with -P, so the folder it runs in can plant no
    module (python -m would import ./cudamatrix first)."""
    import sys

    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if shlex.join(words) != line or not words:
        return None
    prefix: list[str] = []
    if words[0].startswith("LD_LIBRARY_PATH="):
        folders = words[0].partition("=")[2].split(":")
        if not all(os.path.isabs(f) and _inside_any(f, roots) for f in folders):
            return None
        prefix, words = [words[0]], words[1:]
    if not words:
        return None
    program = os.path.basename(words[0])
    by_name = _HOST_COMPILER.match(words[0]) is not None
    if not by_name and (not os.path.isabs(words[0]) or (
            _COMPILERS.search(program) is None and _HOST_COMPILER.match(program) is None)):
        return None
    if by_name:
        pass  # found on PATH by the shell that runs the script, as -ccbin's is
    elif program.startswith("python"):
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
    """A record's value as a comment or a message may hold it: one line, nothing a terminal
    or a CI log acts on (common/log_line.py)."""
    return log_line(text)


def _refused(result: CellResult, field: str, value: str, why: str) -> UserError:
    """A record refused in one line that names the field and the value it read there."""
    return UserError(f"cell {_said(result.cell.id)[:120]!r}: its record's {field} holds "
                     f"{_said(value)[:80]!r}, {why}: not printed as a script (a record from "
                     "elsewhere is data, never code)")


# --- a compile's commands -------------------------------------------------------------------

# Where a compile's words are read from in a record.
_LOG_FIELD = "stages[compile].log"
# What nvcc's own /bin/sh acts on inside the double quotes nvcc puts each word in when it
# runs cicc, ptxas and the host compiler (`$(cmd)`, `${x}`, backticks, `\`), and the quotes
# that would end them: printed single-quoted for this shell, they still ran in nvcc's.
_NVCC_SHELL = frozenset("$`\"'\\")
# Options whose value is a file a compiler writes (nvcc, clang, gcc, ptxas, ld) and those
# whose value is a folder it writes into; the record's path is never written as it is.
_WRITES_FILE = ("-o", "--output-file", "-MF", "--dependency-output", "-MJ", "-aux-info",
                "-dumpbase", "--serialize-diagnostics", "-Map", "--Map", "--out-implib",
                "--dependency-file")
_WRITES_FOLDER = ("-odir", "--output-directory", "--keep-dir", "-keep-dir", "-dumpdir")
# The output options a compiler also reads with the value joined to them (`-ofile`).
_JOINED = ("-o", "-MF", "-MJ")
# Options that hand their value on to another program (nvcc's host compiler, linker,
# ptxas, nvlink; clang's cc1 and ptxas; gcc's linker, assembler, preprocessor): what they
# carry is checked piece by piece, and an output option among it is refused, since the
# script cannot tell which program's file it would be.
_PASSES_ON = re.compile(r"-X[A-Za-z][\w-]*|--(compiler|linker|ptxas|nvlink|fatbin|archive)"
                        r"-options")
_PASSES_ON_JOINED = re.compile(r"(-X[A-Za-z][\w-]*=|--(compiler|linker|ptxas|nvlink|fatbin|"
                               r"archive)-options=|-W[alp],)")
# Words that make a compiler read more words from a file (nvcc's options file, a
# response file): words nothing here checked.
_READS_WORDS = re.compile(r"^(@|--?optf$|--?optf=|--options-file($|=))")


def _output_option(piece: str) -> bool:
    """Whether a word, as another program reads it, names a file or folder it writes."""
    options = (*_WRITES_FILE, *_WRITES_FOLDER)
    return piece in options or any(piece.startswith(f"{o}=") for o in options) or any(
        piece.startswith(o) and "/" in piece for o in _JOINED)


def _own_output(result: CellResult, option: str, value: str) -> str:
    """An output's value as the script writes it: a folder is the script's own, a file
    its base name there (`-o /home/you/.bashrc` writes `.bashrc` in the script's folder);
    a value that leaves no name (`/`, `..`) is refused."""
    if option in _WRITES_FOLDER:
        return "."
    if value == "-":  # the compiler's stdout
        return value
    name = os.path.basename(value.rstrip("/"))
    if name in ("", ".", ".."):
        raise _refused(result, _LOG_FIELD, f"{option} {value}", "an output that names no "
                       "file of its own")
    return name


def _joined_output(word: str) -> tuple[str, str, str] | None:
    """A word that is an output option with its value joined (`--output-file=F`, `-oF`):
    the option, what joins them, the value; else None."""
    for option in (*_WRITES_FILE, *_WRITES_FOLDER):
        if word.startswith(f"{option}="):
            return option, "=", word[len(option) + 1:]
    for option in _JOINED:
        if word.startswith(option) and len(word) > len(option) and word not in _WRITES_FOLDER:
            return option, "", word[len(option):]
    return None


def _checked_word(result: CellResult, word: str, nvcc: bool, passed_on: bool) -> None:
    """Refuse a word nvcc's shell would act on, one that reads words from a file, and an
    output option handed on to another program."""
    if nvcc:
        special = next((c for c in word if c in _NVCC_SHELL or not c.isprintable()), None)
        if special is not None:
            raise _refused(result, _LOG_FIELD, word, f"with {special!r}, which nvcc's own "
                           "/bin/sh would expand or run")
    pieces = _pieces(word)
    if any(_READS_WORDS.match(piece) for piece in pieces):
        raise _refused(result, _LOG_FIELD, word, "which reads more options from a file")
    handed = _PASSES_ON_JOINED.match(word)
    inner = [word] if passed_on else _pieces(word[handed.end():]) if handed else []
    if any(_output_option(p) for p in (*inner, *(_pieces(word)[1:] if passed_on else ()))):
        raise _refused(result, _LOG_FIELD, word, "an output handed on to another program, "
                       "which would write where the record says")


def _kept_inside(result: CellResult, words: list[str], made: dict[str, str]) -> list[str]:
    """A command's words with every file it writes in the script's own folder (each output
    option's value its base name, each output folder `.`), after each word is checked:
    what a record names is never overwritten, whatever it names. `made`: what the earlier
    commands wrote, by the record's path and the script's name, so a later command reads
    the script's file (a torch extension's link, its objects), never the record's; this
    command's outputs are added."""
    program = next(i for i, w in enumerate(words) if not w.startswith("LD_LIBRARY_PATH="))
    nvcc = os.path.basename(words[program]) == "nvcc"
    kept = words[:program + 1]
    taking: str | None = None  # the output option whose value this word is
    passed_on = False  # the word is an option's value for another program (-Xcompiler W)
    for word in words[program + 1:]:
        _checked_word(result, word, nvcc, passed_on)
        if taking is not None:
            kept.append(_own_output(result, taking, word))
            made[word] = kept[-1]
            taking = None
        elif not passed_on and word in (*_WRITES_FILE, *_WRITES_FOLDER):
            taking = word
            kept.append(word)
        elif not passed_on and (joined := _joined_output(word)) is not None:
            option, joint, value = joined
            made[value] = _own_output(result, option, value)
            kept.append(f"{option}{joint}{made[value]}")
        else:
            kept.append(made.get(word, word))
        passed_on = not passed_on and taking is None and _PASSES_ON.fullmatch(word) is not None
    return kept


def _compile_commands(result: CellResult, log: str, roots: list[str]) -> list[str]:
    """The compile's logged commands as the script runs them, each one compiler's plain
    line, its words checked and its outputs in the script's own folder; or a refusal."""
    lines = [line[2:] for line in log.splitlines() if line.startswith("$ ")]
    if not lines:
        raise UserError(f"cell {_said(result.cell.id)!r}: its compile stage logged no command "
                        "(a CuPy cell compiles through the driver)")
    commands = []
    made: dict[str, str] = {}
    for line in lines:
        words = _one_program(line, roots)
        if words is None:
            raise UserError(f"cell {_said(result.cell.id)!r}: its log's command "
                            f"{_said(line[:80])!r} is not one compiler's plain command line "
                            "(a toolkit's, running no other program): not printed as a script "
                            "(a record from elsewhere may hold anything)")
        commands.append(shlex.join(_kept_inside(result, words, made)))
    return commands


# --- a build cell's build -------------------------------------------------------------------

# A variable's name as a build's environment may hold it (the case's `env`).
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The search paths a build is given, of which a record's folders are kept only where a
# toolkit or the system has them (this machine's cache, /usr, /opt): the rest are the
# shell's own that runs the script.
_SEARCH_PATHS = ("PATH", "LIBRARY_PATH", "LD_LIBRARY_PATH", "PYTHONPATH")


def _build_here(result: CellResult, cases: Mapping[str, Case]) -> Variant:
    """The build cell's variant as its case is here: a record from elsewhere brings no
    build of its own to run."""
    from ..stages.frontends import frontend

    case = cases.get(result.cell.case)
    variant = next((v for v in case.variants if v.name == result.cell.variant), None) \
        if case is not None else None
    if case is None or variant is None or variant.build is None \
            or not frontend(variant.frontend).builds_project:
        raise UserError(f"cell {_said(result.cell.id)[:120]!r}: a build cell's repro runs its "
                        f"case as it is here, and build {_said(result.cell.case)[:60]!r} "
                        f"variant {_said(result.cell.variant)[:60]!r} is not here "
                        "(cudamatrix.toml's cases, --corpus DIR, --known-bugs): a record's own "
                        "build commands and environment are never run")
    return variant


def _recorded_folder(result: CellResult, field: str, value: object, roots: list[str]) -> str:
    """A folder a record names (its toolkit, its project): used only where it is this
    machine's cache's or the system's."""
    if not isinstance(value, str) or not os.path.isabs(value) or not os.path.isdir(value) \
            or not _inside_any(value, roots):
        raise _refused(result, field, str(value), "no folder of a toolkit this machine's "
                       "cudamatrix made or of the system's (/usr, /opt)")
    return value


def _recorded_host(result: CellResult, value: object, roots: list[str]) -> str | None:
    """The host compiler the run gave the build ($CXX): by its name (found on PATH) or by
    its path on the system, as a repro's -ccbin is."""
    if value is None:
        return None
    if isinstance(value, str) and _HOST_COMPILER.match(os.path.basename(value)) and (
            _inside_any(value, roots) if os.path.isabs(value) else "/" not in value):
        return value
    raise _refused(result, "environment.CXX", str(value), "no host compiler by its name or "
                   "by its path on the system")


def _search_paths(environment: Mapping[str, object], roots: list[str]) -> list[str]:
    """An export per search path: the record's folders a toolkit or the system has, ahead
    of the shell's own."""
    exported = []
    for name in _SEARCH_PATHS:
        value = environment.get(name)
        folders = [f for f in (value.split(os.pathsep) if isinstance(value, str) else [])
                   if os.path.isabs(f) and _inside_any(f, roots)]
        if folders:
            joined = shlex.quote(os.pathsep.join(dict.fromkeys(folders)))
            exported.append(f'export {name}={joined}"${{{name}:+:${name}}}"')
    return exported


def build_script(result: CellResult, stage: StageResult | None,
                 cases: Mapping[str, Case], cache: Path) -> str:
    """A build cell's build as a shell script, from its case as it is here: a fresh copy
    of the project, what the tool tells a build of its cell (its arch, its toolkit as
    $CUDA_HOME, its host compiler, the case's own `env`), then each of the case's commands
    as words (every placeholder filled, no shell between). Of the record only the toolkit's
    and tools' folders are read, each checked to be this machine's cache's or the system's;
    its commands and the rest of its environment (BASH_ENV, LD_PRELOAD, ...) never run."""
    from ..common.versions import Arch
    from ..stages.frontends.build_run import cell_variables, fill_with, placeholders

    variant = _build_here(result, cases)
    assert variant.build is not None  # _build_here found a build
    details = stage.details if stage is not None else {}
    environment = details.get("environment")
    environment = environment if isinstance(environment, dict) else {}
    roots = _programs_allowed(cache)
    cuda_home = "" if environment.get("CUDA_HOME") is None else _recorded_folder(
        result, "environment.CUDA_HOME", environment.get("CUDA_HOME"), roots)
    host = _recorded_host(result, environment.get("CXX"), roots)
    project = str(variant.source) if variant.build.project is None else _recorded_folder(
        result, "project_path", details.get("project_path"),
        [os.path.realpath(cache)])
    try:
        arch = Arch.parse(result.cell.arch).name
    except ValueError:
        raise _refused(result, "arch", result.cell.arch, "no GPU architecture") from None
    values = placeholders(arch, cuda_home, str(variant.source), host)
    variables = {**cell_variables(arch, cuda_home, host),
                 **{name: fill_with(value, values) for name, value in variant.build.env}}
    exported = []
    for name, value in sorted(variables.items()):
        if not _NAME.fullmatch(name):
            raise UserError(f"case {variant.source}: its build's env names {_said(name)[:40]!r}, "
                            "no variable's name")
        exported.append(f"export {name}={shlex.quote(value)}")
    commands = [shlex.join(fill_with(w, values) for w in shlex.split(c))
                for c in variant.build.commands]
    return "\n".join([
        "#!/bin/sh",
        _said(f"# {result.cell.id}: its build, from case {result.cell.case} as it is here "
              f"({variant.source}), in a fresh copy of {project}"),
        "# It runs this case's own build commands (a case is code); the record's commands "
        "and environment are not read.",
        "set -e",
        'work="$(mktemp -d)"',
        f'cp -R {shlex.quote(project)} "$work/project"',
        'cd "$work/project"',
        'echo "building in $work/project" >&2',
        *exported, *_search_paths(environment, roots),
        *commands, ""])


def _no_cases() -> Mapping[str, Case]:
    return {}


def compile_script(result: CellResult, out: Path,
                   cases: Callable[[], Mapping[str, Case]] = _no_cases,
                   cache: Path | None = None) -> str:
    """A cell's compile as a shell script: each command its compile stage ran, as its log
    shows it (the compiler by its path, every flag, LD_LIBRARY_PATH where NVRTC needs it),
    run in a fresh folder of its own, where every file it writes goes. A build cell's
    build comes from its case here (`cases`, read only for one). `cache`: the run's --cache,
    whose toolkits its compilers are (default: the default cache)."""
    compile_stage = next((s for s in result.stages if s.stage == "compile"), None)
    from ..config.options import default_cache
    from ..stages.frontends import frontend

    cache = cache if cache is not None else default_cache()
    try:
        builds_project = frontend(result.cell.frontend).builds_project
    except (KeyError, UserError):
        raise UserError(f"cell {_said(result.cell.id)!r}: its record names frontend "
                        f"{_said(result.cell.frontend)!r}, which this cudamatrix does not "
                        "have: not printed as a script") from None
    if builds_project:
        return build_script(result, compile_stage, cases(), cache)
    commands = _compile_commands(result, compile_stage.log if compile_stage else "",
                                 _programs_allowed(cache))
    return "\n".join([
        "#!/bin/sh",
        _said(f"# {result.cell.id}: its compile, as the run into {out} ran it "
              f"({result.outcome} at {result.stage}); what it writes goes into a folder of "
              "its own"),
        "set -e",
        'work="$(mktemp -d)"',
        'cd "$work"',
        'echo "compiling in $work" >&2',
        *commands, ""])


def _repro(args: argparse.Namespace, invocation: Invocation) -> int:
    from .selection import cases_here

    # A line at a time through the log's rule: a line the script needs is as it was made
    # (each word quoted, each comment _said), nothing in it starts a CI log's command.
    say_lines(compile_script(_recorded_cell(args.out, args.cell), args.out,
                             lambda: cases_here(args), args.cache))
    return 0


def _arguments(repro: argparse.ArgumentParser) -> None:
    repro.add_argument("cell", metavar="ID", help="the cell's id, as the report names it")
    repro.add_argument("--out", type=Path, default=Path("reports/latest"),
                       help="the run's --out folder (its results.json)")
    add_flag(repro, "--corpus", "cases a build cell's repro is read from (with "
             "cudamatrix.toml's and --known-bugs): a build runs as its case is here")
    add_flag(repro, "--known-bugs", "the known-bug corpus's cases too")
    add_flag(repro, "--cache", "the cache the run was made with (its --cache), whose "
             "toolkits a repro's compilers may come from")


COMMAND = Command("repro", "a shell script that runs a cell's compile (a build cell's whole "
                  "build, from its case here) again, outside the tool",
                  _arguments, _repro)
