"""Every command, in the order `cudamatrix --help` lists them: the one place a new command
is added (a module of this package exporting ``COMMAND``, named here)."""

from __future__ import annotations

from . import bisect, init, list_cells, merge, plan, report, repro, run, validate
from .audit import command as audit
from .command import Command

COMMANDS: tuple[Command, ...] = tuple(module.COMMAND for module in (
    init, run, bisect, validate, list_cells, report, repro, plan, merge, audit))
