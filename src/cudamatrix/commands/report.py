"""`cudamatrix report`: the reports written again from a results.json, its stages judged
again against the cases as they are now with --rejudge."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from .arguments import add_baseline, add_flag, add_history
from .command import Command, Invocation
from .publishing import publish_reports
from .selection import cases_here

if TYPE_CHECKING:
    from ..config.corpus import Case


def _rejudged_against(args: argparse.Namespace) -> dict[str, Case]:
    """The cases --rejudge judges against: those a run would load here."""
    cases = cases_here(args)
    if not cases:
        raise UserError("--rejudge: no cases to judge against (--corpus DIR, --known-bugs)")
    return cases


def _report(args: argparse.Namespace, invocation: Invocation) -> int:
    from ..record.results import load_results
    from ..record.verdict import rejudge

    info, results = load_results(args.results)
    cases = _rejudged_against(args) if args.rejudge else None
    if cases is not None:
        results = rejudge(results, cases)
    return publish_reports(args, invocation.console, args.out, info, results, cases=cases)


def _arguments(report: argparse.ArgumentParser) -> None:
    report.add_argument("results", type=Path,
                        help="a run's results.json (or a merged one)")
    report.add_argument("--out", type=Path, required=True,
                        help="the folder the reports are written to")
    report.add_argument("--rejudge", action="store_true",
                        help="judge the recorded stages again against the cases as they are "
                             "now (cudamatrix.toml's, --corpus, --known-bugs): after fixing an "
                             "expectation, without running anything again")
    add_flag(report, "--corpus", "with --rejudge: an extra folder of cases (repeatable)")
    add_flag(report, "--known-bugs", "with --rejudge: the tool's corpus of known CUDA bugs")
    add_baseline(report)
    add_history(report)


COMMAND = Command("report", "rewrite the reports from a results.json", _arguments, _report,
                  checks_out=True)
