"""`cudamatrix list`: the ids of the cells a run would have, one a line."""

from __future__ import annotations

import argparse

from .arguments import add_selection
from .command import Command, Invocation
from .selection import options_from


def _list(args: argparse.Namespace, invocation: Invocation) -> int:
    from ..config.planning import make_plan

    listed = make_plan(options_from(args))
    for cell in listed.cells:
        invocation.console.print(cell.id, markup=False)
    for cell, _ in listed.ruled_out:  # listed too: each a skip saying why, in a run
        invocation.console.print(cell.id, markup=False)
    return 0


COMMAND = Command("list", "print the cells a run would have", add_selection, _list)
