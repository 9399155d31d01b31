"""Every report of a record written, the console's summary of it, and the exit status
(new failures with a baseline, any failure without): what run, bisect, report, merge and
audit end with."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.log_line import log_line, say
from ..common.words import shortened
from ..config.defaults import DEFAULT_HISTORY_RUNS as DEFAULT_RUNS

if TYPE_CHECKING:
    from rich.console import Console

    from ..config.corpus import Case
    from ..record.baseline import Baseline, BaselineDiff
    from ..record.results import CellResult, RunInfo
    from ..record.verdict_rules import FailOn


def publish_reports(args: argparse.Namespace, console: Console, out: Path, info: RunInfo,
                    results: list[CellResult], baseline: Baseline | None = None,
                    cases: Mapping[str, Case] | None = None) -> int:
    """The run-level verdicts (record.verdict.judge_run: `max_slowdown` where the `cases`
    are given, an xpass against the baseline), then every report (with the baseline diff
    when asked), published to the CI it runs in (GitHub, GitLab); the exit status as
    --fail-on says: new failures with a baseline, any failure without, or 0 once the record
    is written (a CI shard, whose verdict is the merge's)."""
    from ..record.baseline import (
        RunSelection,
        compare,
        load_baseline,
        runner_labels,
    )
    from ..record.diagnose import unexplained_said
    from ..record.history import PastRun, gather
    from ..record.verdict import judge_run
    from ..record.verdict_rules import exit_status
    from ..reports import write_reports
    from ..reports.ci import publish

    diff = None
    before = None
    if args.baseline:
        before = baseline if baseline is not None else load_baseline(args.baseline)
    labels = runner_labels(info.runner_label)
    results = judge_run(results, cases, before, labels)
    if args.baseline and before is not None:
        def given(name: str) -> frozenset[str]:  # report and merge have no selection
            return frozenset(getattr(args, name, None) or ())

        selection = RunSelection(given("case"), given("variant"), given("toolkit"),
                                 given("arch"), given("cell"),
                                 sharded=getattr(args, "shard", None) is not None)
        diff = compare(str(args.baseline), before, results, info.tier, labels, selection)
    history = gather(getattr(args, "history", []), PastRun.of(info, results),
                     getattr(args, "history_runs", DEFAULT_RUNS))
    written = write_reports(out, info, results, diff, history)
    publish(out / "COMPATIBILITY.md", results, diff)
    say(summary_line(results, info.wall_seconds), console)
    said = unexplained_said(results)
    if said:
        say(said, console)
    if diff is not None:
        say(f"since {args.baseline}: {len(diff.new_failures)} new failures, "
            f"{len(diff.fixed)} fixed, {len(diff.flipped)} flipped, "
            f"{len(diff.added)} added, {len(diff.removed)} removed, "
            f"{len(diff.resources)} resource changes, "
            f"{len(diff.slower)} slower, {len(diff.times) - len(diff.slower)} faster"
            + (f"; {diff.outside} of its cells are outside this run (tier "
               f"{before.tier if before else '?'}, runners or selection) and not "
               "compared" if diff.outside else ""), console)
        for change in diff.new_failures[:20]:  # a shard's message: folded before it is cut
            say(f"  new failure: {change.cell}: {shortened(log_line(change.message), 160)}",
                console)
        for grown in diff.resources[:20]:
            say(f"  resources: {grown.cell}: {grown.describe()}", console)
        for moved in diff.times[:20]:
            say(f"  time: {moved.cell}: {moved.describe()}", console)
    say("reports: " + ", ".join(str(p) for p in written), console)
    write_outputs(out, results, diff)
    return exit_status(fail_on_of(args), (r.outcome for r in results),
                       len(diff.new_failures) if diff is not None else None)


def summary_line(results: list[CellResult], seconds: float) -> str:
    """The counts a command ends with: `pass=8 (8 compiled only: no GPU) xfail=0 ...`, the
    passes that were only compiled said beside theirs (a pass on a machine without a GPU
    is a compile and an audit, and `pass=8` alone read as eight kernels run)."""
    from ..record.results import summary
    from ..reports.glance import CompiledOnly

    compiled = CompiledOnly.of(results).said()
    return " ".join(f"{k}={v}" + (f" ({compiled})" if k == "pass" and compiled else "")
                    for k, v in summary(results).items()) \
        + f" ({len(results)} cells, {seconds:.1f} s)"


def fail_on_of(args: argparse.Namespace) -> FailOn:
    """What fails the command, as the verdict's rule reads --fail-on,
    --allow-new-failures and --baseline (each command that has them)."""
    from ..record import verdict_rules

    return verdict_rules.fail_on_of(getattr(args, "fail_on", None),
                                    bool(getattr(args, "allow_new_failures", False)),
                                    bool(getattr(args, "baseline", None)))


def write_outputs(out: Path, results: list[CellResult], diff: BaselineDiff | None) -> None:
    """Under GitHub Actions, the step's outputs a caller's later jobs read: the counts, the
    new failures (ids, JSON) and the report folder."""
    import json
    import os

    from ..record.results import summary

    target = os.environ.get("GITHUB_OUTPUT")
    if os.environ.get("GITHUB_ACTIONS") != "true" or not target:
        return
    counts = summary(results)
    new = [c.cell for c in diff.new_failures] if diff is not None else None
    lines = [f"{name}={value}" for name, value in counts.items()]
    lines += [f"cells={len(results)}", f"counts={json.dumps(counts)}",
              f"report={out}",
              f"new-failures={len(new) if new is not None else ''}",
              f"new-failures-json={json.dumps(new) if new is not None else ''}"]
    with Path(target).open("a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))
