"""`cudamatrix list`: the ids of the cells a run would have, one a line; with --json, each
cell's axes as a JSON list a script reads (and the reason of each cell the plan rules
out, which a run reports as a skip)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..common.log_line import say, say_json
from .arguments import add_selection
from .command import Command, Invocation
from .selection import options_from

if TYPE_CHECKING:
    from ..config.plan import Cell


def _list(args: argparse.Namespace, invocation: Invocation) -> int:
    from ..config.planning import make_plan

    listed = make_plan(options_from(args))
    if args.json:
        def described(cell: Cell, ruled_out: str | None) -> dict[str, object]:
            return {"id": cell.id, "case": cell.case, "variant": cell.variant,
                    "toolkit": cell.toolkit, "arch": cell.arch, "frontend": cell.frontend,
                    "library": cell.library, "library_version": cell.library_version,
                    "host_compiler": cell.host_compiler, "python": cell.python,
                    "ruled_out": ruled_out}

        cells = [described(c, None) for c in listed.cells]
        cells += [described(c, str(why)) for c, why in listed.ruled_out]
        say_json(cells, indent=1)
        return 0
    for cell in listed.cells:
        say(cell.id, invocation.console)
    for cell, _ in listed.ruled_out:  # listed too: each a skip saying why, in a run
        say(cell.id, invocation.console)
    return 0


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_selection(parser)
    parser.add_argument("--json", action="store_true",
                        help="a JSON list of the cells, each with its axes (and why the plan "
                             "rules it out, where it does)")


COMMAND = Command("list", "print the cells a run would have", _arguments, _list)
