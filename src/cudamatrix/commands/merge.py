"""`cudamatrix merge`: one record and report from shards' --out folders; with --plan, every
planned cell no shard reported is an error naming its job."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.log_line import say
from ..errors import UserError
from .arguments import add_baseline, add_flag, add_history
from .command import Command, Invocation
from .publishing import publish_reports
from .selection import cases_here, options_from

if TYPE_CHECKING:
    from ..record.merge import ExpectedShard

# How large a workflow plan may be: a job a line, a few hundred bytes each.
PLAN_BYTES = 64 << 20


def planned_shards(plan_file: Path, matrix: Path | None, parser: argparse.ArgumentParser
                   ) -> list[ExpectedShard]:
    """The jobs of a workflow plan, each with the cells its arguments select (read by
    `parser`, the command line's own), those it reports as ruled out included, as the plan
    counted them."""
    from ..common.recorded import UnreadableRecord, read_json
    from ..config.planning import make_plan
    from ..record.merge import ExpectedShard

    try:
        jobs = read_json(plan_file, PLAN_BYTES)["include"]
        expected = []
        for job in jobs:
            if not isinstance(job, dict) or not all(
                    isinstance(job.get(k), str) for k in ("args", "name", "artifact", "label")):
                raise TypeError(f"a job without its args, name, artifact and label as text: "
                                f"{str(job)[:80]}")  # shlex.split(None) reads stdin
            job_args = parser.parse_args(["run", *(["--matrix", str(matrix)] if matrix else []),
                                          *shlex.split(job["args"])])
            made = make_plan(options_from(job_args))
            # The job reports its ruled-out cells too (as skips): each is expected.
            cells = [*made.cells, *(cell for cell, _ in made.ruled_out)]
            expected.append(ExpectedShard(job["name"], job["artifact"], job["label"],
                                          tuple(cells)))
    except OSError as exc:
        raise UserError(f"--plan {plan_file}: cannot read it ({exc.strerror})") from None
    except UnreadableRecord as exc:  # no file, no JSON: said as read_json says it
        raise UserError(f"--plan {plan_file}: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"--plan {plan_file}: not a plan from `cudamatrix plan` "
                        f"({type(exc).__name__}: {exc})") from None
    return expected


def _merge(args: argparse.Namespace, invocation: Invocation) -> int:
    from ..record.merge import merge_results

    console = invocation.console
    expected = planned_shards(args.plan, args.matrix, invocation.parser) if args.plan else ()
    info, results = merge_results(args.shards, expected)
    for name, why in info.environment_errors.items():  # said here, not only inside
        if name.startswith("shard "):
            say(f"warning: {name}: {why}", invocation.errors)
    # max_slowdown against a toolkit another shard ran: only the merge has both (the
    # cases are read only where some cell was timed).
    cases = cases_here(args) if any(r.timing for r in results) else {}
    return publish_reports(args, console, args.out, info, results, cases=cases)


def _arguments(merge: argparse.ArgumentParser) -> None:
    merge.add_argument("shards", type=Path, nargs="*",
                       help="the shards' folders or results.json files (a shard uploaded "
                            "again by a re-run: its newest attempt is taken)")
    merge.add_argument("--out", type=Path, required=True,
                       help="the folder the merged reports are written to")
    merge.add_argument("--plan", type=Path, metavar="PLAN_JSON",
                       help="the job matrix `cudamatrix plan` printed: every planned cell no "
                            "shard reported becomes an error naming its job")
    merge.add_argument("--matrix", type=Path, default=None,
                       help="the matrix the plan was made from (with --plan)")
    add_flag(merge, "--corpus", "cases to judge max_slowdown with across the shards (with "
             "cudamatrix.toml's and --known-bugs; none: not judged)")
    add_flag(merge, "--known-bugs", "the known-bug corpus's cases too")
    add_baseline(merge)
    add_history(merge)


COMMAND = Command("merge", "one report from shards' --out folders", _arguments, _merge,
                  checks_out=True)
