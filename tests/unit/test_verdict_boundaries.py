"""Every boundary of a cell's verdict (verdict.decide), generated rather than listed: each
stage a cell can stop at x each status it can stop with x each expectation a case can write
(pass; a failure or a hang, at no stage or at each stage, its words matching or not). The
verdict each row must get comes from the small table below, written here and never from
verdict.py, so a rule changed there (a `>=` made `>`) meets a row that says otherwise.

test_verdict.py keeps the hand-written rows that say why; this file keeps none out."""

from __future__ import annotations

import itertools
from typing import get_args

import pytest

from cudamatrix.config.case_tables import Expectation
from cudamatrix.record.verdict import decide
from cudamatrix.stages.cell.result import Stage, StageResult, Status

ORDER: tuple[Stage, ...] = ("compile", "inspect", "load", "run")
STATUSES: tuple[Status, ...] = get_args(Status)
KINDS = ("pass", "fail", "timeout")
SAID = "said no"  # what every stopping stage says, and the words a matching case expects

# What a stage that stopped the cell with `status` means against a case expecting `kind`
# at the stage it stopped at (or at none), in the words it said.
HERE: dict[tuple[str, str], str] = {
    ("ok", "pass"): "pass", ("ok", "fail"): "xpass", ("ok", "timeout"): "xpass",
    ("failed", "pass"): "fail", ("failed", "fail"): "xfail", ("failed", "timeout"): "fail",
    ("timeout", "pass"): "error", ("timeout", "fail"): "error",
    ("timeout", "timeout"): "xfail",
    ("skipped", "pass"): "pass", ("skipped", "fail"): "skip", ("skipped", "timeout"): "skip",
    **{(status, kind): "error" for status in ("error", "crashed") for kind in KINDS},
    **{(status, kind): "skip" for status in ("unsupported", "unavailable") for kind in KINDS},
}
# Where the expected failure is elsewhere (another stage, other words), only these differ:
# a failure or hang somewhere else is a failure of its own; a stage skipped after the
# expected one passed means the expected failure did not happen.
ELSEWHERE: dict[tuple[str, str, str], str] = {
    ("failed", "fail", "earlier"): "fail", ("failed", "fail", "later"): "fail",
    ("failed", "fail", "other words"): "fail",
    ("timeout", "timeout", "earlier"): "fail", ("timeout", "timeout", "later"): "fail",
    ("timeout", "timeout", "other words"): "fail",
    ("skipped", "fail", "earlier"): "xpass", ("skipped", "timeout", "earlier"): "xpass",
}


def _where(stopped: Stage, status: Status, wanted: Stage | None, match: str | None) -> str:
    """Where the case's expected failure stands from the stage that stopped the cell."""
    if status == "skipped" and wanted is None:
        wanted = ORDER[-1]  # a failure at no stage named may be as late as the run
    if wanted is not None and ORDER.index(wanted) < ORDER.index(stopped):
        return "earlier"
    if wanted is not None and ORDER.index(wanted) > ORDER.index(stopped):
        return "later"
    return "other words" if match is not None and match != SAID else "here"


def _expected(stopped: Stage, status: Status, expectation: Expectation) -> str:
    if status == "skipped" and stopped == ORDER[0]:
        return "skip"  # nothing ran: nothing was checked, whatever the case expects
    where = _where(stopped, status, expectation.stage, expectation.match)
    return ELSEWHERE.get((status, expectation.outcome, where),
                         HERE[(status, expectation.outcome)])


def _expectations() -> list[Expectation]:
    failing = [Expectation(kind, stage=stage, match=match)  # type: ignore[arg-type]
               for kind, stage, match in itertools.product(
                   ("fail", "timeout"), (None, *ORDER), (None, SAID, "other words"))]
    return [Expectation("pass"), *failing]


def _stages(stopped: Stage, status: Status) -> list[StageResult]:
    """Every stage before `stopped` passed; `stopped` ended with `status`."""
    before = ORDER[:ORDER.index(stopped)]
    said = "" if status == "ok" else f"{stopped} {SAID}"
    return [*(StageResult(stage, "ok") for stage in before),
            StageResult(stopped, status, said, f"error: {said}" if status == "failed" else "")]


ROWS = list(itertools.product(ORDER, STATUSES, _expectations()))


def test_the_table_covers_every_status_and_kind() -> None:
    """A status added to StageResult without a row here fails this, not silently."""
    assert {status for status, _ in HERE} == set(STATUSES)
    assert {kind for _, kind in HERE} == set(KINDS)


@pytest.mark.parametrize(("stopped", "status", "expectation"), ROWS,
                         ids=[f"{s}-{st}-{e.describe()}" for s, st, e in ROWS])
def test_every_boundary(stopped: Stage, status: Status, expectation: Expectation) -> None:
    stages = _stages(stopped, status)
    assert decide(expectation, stages).outcome == _expected(stopped, status, expectation), \
        [(s.stage, s.status) for s in stages]


def test_a_failure_expected_where_no_gpu_ran_it_is_undecided() -> None:
    """The mistake that survived the unit lane (issue 80): a failure expected at the load,
    the load skipped here (no GPU), judged xpass instead of skip."""
    stages = _stages("load", "skipped")
    assert decide(Expectation("fail", stage="load"), stages).outcome == "skip"


def test_a_first_stage_skipped_is_no_pass() -> None:
    """A cell whose compile was not run (nothing passed) says nothing about the code."""
    assert decide(Expectation("pass"), _stages("compile", "skipped")).outcome == "skip"
