"""Every report of a record written, the console's summary of it, and the exit status
(new failures with a baseline, any failure without): what run, bisect, report, merge and
audit end with."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.defaults import DEFAULT_HISTORY_RUNS as DEFAULT_RUNS

if TYPE_CHECKING:
    from rich.console import Console

    from ..record.results import CellResult, RunInfo


def publish_reports(args: argparse.Namespace, console: Console, out: Path, info: RunInfo,
                    results: list[CellResult],
                    baseline: dict[str, dict[str, Any]] | None = None) -> int:
    """Write every report (with the baseline diff when asked), publish to GitHub when there;
    the exit status: new failures with a baseline, any failure without."""
    from ..record.baseline import compare, load_baseline, settle_xpass
    from ..record.history import PastRun, gather
    from ..record.results import exit_status, summary
    from ..reports import write_reports
    from ..reports.github import publish

    diff = None
    before = None
    if args.baseline:
        before = baseline if baseline is not None else load_baseline(args.baseline)
    results = settle_xpass(results, before)
    if args.baseline and before is not None:
        diff = compare(str(args.baseline), before, results)
    history = gather(getattr(args, "history", []), PastRun.of(info, results),
                     getattr(args, "history_runs", DEFAULT_RUNS))
    written = write_reports(out, info, results, diff, history)
    publish(out / "COMPATIBILITY.md", results, diff)
    counts = summary(results)
    console.print(" ".join(f"{k}={v}" for k, v in counts.items()) +
                  f" ({len(results)} cells, {info.wall_seconds:.1f} s)")
    if diff is not None:
        console.print(f"since {args.baseline}: {len(diff.new_failures)} new failures, "
                      f"{len(diff.fixed)} fixed, {len(diff.flipped)} flipped, "
                      f"{len(diff.added)} added, {len(diff.removed)} removed, "
                      f"{len(diff.resources)} resource changes, "
                      f"{len(diff.slower)} slower, {len(diff.times) - len(diff.slower)} faster")
        for change in diff.new_failures[:20]:
            console.print(f"  new failure: {change.cell}: {change.message[:160]}", markup=False)
        for grown in diff.resources[:20]:
            console.print(f"  resources: {grown.cell}: {grown.describe()}", markup=False)
        for moved in diff.times[:20]:
            console.print(f"  time: {moved.cell}: {moved.describe()}", markup=False)
    console.print("reports: " + ", ".join(str(p) for p in written))
    if diff is not None:
        return 1 if diff.new_failures and not args.allow_new_failures else 0
    return exit_status(results)
