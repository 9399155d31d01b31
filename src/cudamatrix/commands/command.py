"""What a command of the command line is: its name and help, the arguments it adds to its
own parser, and its handler. Each command is one module of this package exporting one
`Command` as ``COMMAND``, named by a ``cudamatrix.commands`` entry point (pyproject.toml);
``table.commands()`` loads them, and cli.py wires them up.

A command module imports at its top only what building the parser needs (argparse, the
option defaults): `cudamatrix --version` builds every command's parser. Its handler
imports the planner, the runner and the reports when it runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


@dataclass(frozen=True)
class Invocation:
    """What a handler is given besides its arguments: where it prints (what it found on
    stdout; errors and warnings on stderr, so `plan`'s and `schema`'s JSON stays clean), and
    the parser (a merge reads each planned job's arguments with it)."""

    console: Console
    parser: argparse.ArgumentParser
    errors: Console


@dataclass(frozen=True)
class Command:
    """One command: ``handle`` returns the exit status (a `UserError` it raises is printed
    on one line and exits 2)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    handle: Callable[[argparse.Namespace, Invocation], int]
    # Whether its --out is checked as a folder it may write into before any work.
    checks_out: bool = False
