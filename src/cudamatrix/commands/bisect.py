"""`cudamatrix bisect`: its arguments and what it prints; the search itself is
``bisection``."""

from __future__ import annotations

import argparse
import signal
from typing import TYPE_CHECKING

from ..common.log_line import say
from ..errors import UserError
from .arguments import add_baseline, add_history, add_run_arguments, positive_number
from .command import Command
from .publishing import publish_reports
from .selection import run_options

if TYPE_CHECKING:
    from rich.console import Console


def _bisect(args: argparse.Namespace, console: Console) -> int:
    """Bisect, write the cells it ran as a report, print the answer; 0 where it found a
    change, 1 where the ends agree."""
    from ..orchestrator.progress import Progress as PlainProgress
    from ..reports.markdown import bisect_lines
    from .bisection import bisect

    options = run_options(args)
    if len(args.variant) > 1:
        raise UserError(f"bisect --variant: one variant, got {len(args.variant)}")
    progress = PlainProgress()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    info, results = bisect(options, args.over, args.start, args.end,
                           args.variant[0] if args.variant else None, progress,
                           from_index=args.versions == "index", slower=args.slower)
    publish_reports(args, console, options.out, info, results)
    answer = info.bisect
    assert answer is not None  # bisect() always records its answer
    say(f"bisect over {answer['over']}: {len(results)} cells run of "
        f"{len(answer['values'])} values ({info.wall_seconds:.0f} s)", console)
    for line in bisect_lines(answer):
        say(line, console)
    return 0 if answer["changes"] else 1


def _arguments(bisect: argparse.ArgumentParser) -> None:
    add_run_arguments(bisect)
    bisect.add_argument("--over", required=True, metavar="toolkit|library:NAME|project",
                        help="the ordered axis: the matrix's toolkits, a library's releases, "
                             "or the commits of the git repository the cases are in")
    bisect.add_argument("--from", dest="start", metavar="VALUE",
                        help="the first value (a toolkit, a version, a revision)")
    bisect.add_argument("--to", dest="end", metavar="VALUE", help="the last value")
    bisect.add_argument("--slower", type=positive_number, metavar="RATIO",
                        help="find where a timed cell ([variant.time]) first runs more than "
                             "RATIO times slower than at the first value (1.05: 5%%)")
    bisect.add_argument("--versions", choices=("index", "matrix"), default="index",
                        help="library:NAME: its releases from the package index (default) "
                             "or only those the matrix lists")
    add_baseline(bisect)
    add_history(bisect)


COMMAND = Command(
    "bisect", "the toolkit, library release or commit where a cell changed what it does (the "
    "other axes fixed by the usual selectors)", _arguments,
    lambda args, invocation: _bisect(args, invocation.console), checks_out=True)
