"""Command line: the parser, made from the commands' entry points (commands/table.py: each
command's module adds its own arguments), and the call of the command asked for.

Only the parser is imported at start: `cudamatrix --version` and argument errors answer
without loading the runner, the reports or the providers.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import __version__
from .commands.command import Command, Invocation
from .commands.table import commands
from .common.log_line import say
from .errors import UserError


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its error said as one log line (say): argparse quotes what it
    could not read as it came (`unrecognized arguments: ...`, a word that a plan's job
    holds included), and its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        say(f"{self.prog}: error: {message}", stderr=True)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="cudamatrix",
        description="Compile and run a corpus of CUDA reproducers across toolkits, drivers "
                    "and GPU architectures, and report what works where.")
    parser.add_argument("--version", action="version", version=f"cudamatrix {__version__}")
    # -q and -v after any command (`cudamatrix run -q`): how much a run says as it works.
    talk = _Parser(add_help=False)
    said = talk.add_mutually_exclusive_group()
    said.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=-1,
                      default=0, help="say only the cells that failed or erred, warnings, "
                                      "errors and the summary")
    said.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=1,
                      help="plain lines even at a terminal (as in a CI log): every "
                           "cell, each failing one with its message, the cells running")
    subparsers = parser.add_subparsers(dest="command")
    for command in commands():
        # Made apart first: a plugin command whose arguments raise is left out, said on
        # stderr, and every other command (and --version) still works.
        made = argparse.ArgumentParser(prog=f"cudamatrix {command.name}", add_help=False)
        try:
            command.add_arguments(made)
        except Exception as exc:  # a plugin command's may raise anything
            say(f"warning: command {command.name!r} left out: its arguments cannot be made "
                f"({type(exc).__name__}: {exc})", stderr=True)
            continue
        command.add_arguments(subparsers.add_parser(command.name, help=command.help,
                                                    parents=[talk]))
    return parser


def _command(name: str) -> Command:
    return next(command for command in commands() if command.name == name)


def main(argv: Sequence[str] | None = None) -> None:
    """The command asked for; stdout that a reader closed (`cudamatrix plan | head`) ends it
    quietly, one that cannot be written (a full disk) is one line, never a traceback."""
    try:
        _main(argv)
    except BrokenPipeError:
        # Python would complain again flushing stdout at exit: point it at nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        say(f"error: cannot write the output ({exc.strerror})", stderr=True)
        sys.exit(2)


def _main(argv: Sequence[str] | None = None) -> None:
    try:
        # Building the parser loads every command's entry point, and checking --provider
        # every provider's: a plugin that cannot be loaded is one line, not a traceback.
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:  # `cudamatrix --toolkit 13.0` is `cudamatrix run ...`
            args = parser.parse_args(["run", *(argv if argv is not None else sys.argv[1:])])
    except UserError as exc:
        say(f"error: {exc}", stderr=True)
        sys.exit(exc.exit_code)
    from rich.console import Console

    from .common.folders import writable_folder

    # Nothing printed is markup: case ids, paths and compiler messages may hold "[/bold]".
    # No line is cut at the width: a pipe or a CI log counts as 80 columns, and a summary
    # split there ("1 resource\nchanges", a path across two lines) cannot be searched for.
    console = Console(stderr=False, highlight=False, markup=False, soft_wrap=True)
    errors = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
    command = _command(args.command)
    try:
        if command.checks_out and args.out is not None:
            writable_folder(args.out, "the output folder (--out)")  # before any work
        status = command.handle(args, Invocation(console, parser, errors))
    except UserError as exc:
        say(f"error: {exc}", errors)
        sys.exit(exc.exit_code)
    sys.exit(status)
