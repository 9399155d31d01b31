"""The verdict's rules that read outcomes alone (record/verdict_rules.py), each held to what
it must say on every outcome: whether --retries runs a cell again, what a cell is against a
baseline, and the run's exit status as --fail-on says; and which attempt a retried cell
keeps (record/verdict.py). The expected answers are written here from the options' help
and CHANGELOG's words, never from the rules' own code."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest

from cudamatrix.record.outcomes import OUTCOMES
from cudamatrix.record.results import load_results
from cudamatrix.record.verdict import retried_cell
from cudamatrix.record.verdict_rules import (
    FAIL_ON,
    FailOn,
    against_baseline,
    environment_fails_run,
    exit_status,
    runs_again,
)

REPO = Path(__file__).resolve().parents[2]
BROKEN = ("fail", "error")  # a failed or erred cell: what fails a run


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_only_a_cell_not_as_its_case_expects_runs_again_and_only_as_often_as_asked(
        outcome: str) -> None:
    unexpected = outcome in ("fail", "error", "xpass")
    for before, retries in itertools.product(range(3), range(3)):
        assert runs_again(outcome, before, retries) == (unexpected and before < retries), \
            (before, retries)


def test_a_retried_cell_keeps_its_latest_attempt_the_earlier_ones_as_attempts() -> None:
    _, cells = load_results(REPO / "reports" / "results.json")
    passed = next(r for r in cells if r.outcome == "pass")
    first = dataclasses.replace(passed, outcome="fail", stage="run", message="wrong answer")
    second = dataclasses.replace(passed, outcome="error", stage="load", message="lost")
    kept = retried_cell(passed, [first, second])
    assert (kept.outcome, kept.stages) == ("pass", passed.stages)
    assert [(a["outcome"], a["message"]) for a in kept.attempts] == [
        ("fail", "wrong answer"), ("error", "lost")]
    assert kept.flaky
    assert retried_cell(passed, []) is passed


@pytest.mark.parametrize("fail_on", FAIL_ON)
def test_the_exit_status_is_as_fail_on_says(fail_on: FailOn) -> None:
    for outcome, new_failures in itertools.product(OUTCOMES, (None, 0, 2)):
        status = exit_status(fail_on, [outcome, "pass"], new_failures)
        if fail_on == "never":
            wanted = 0
        elif fail_on == "new" and new_failures is not None:
            wanted = int(new_failures > 0)
        else:  # any, or new without a baseline: any failed or erred cell
            wanted = int(outcome in BROKEN)
        assert status == wanted, (outcome, new_failures)


def test_an_environment_not_prepared_fails_the_run_unless_the_merge_judges() -> None:
    assert [environment_fails_run(f) for f in FAIL_ON] == [True, True, False]


STATES = (None, *OUTCOMES)  # None: the baseline has no outcome for the cell


@pytest.mark.parametrize(("before", "after"), list(itertools.product(STATES, OUTCOMES)))
def test_a_cell_against_the_baseline_is_one_change_at_most(before: str | None,
                                                           after: str) -> None:
    for flaky, recorded in itertools.product((False, True), (False, True)):
        ruled = against_baseline(before if recorded else None, after, flaky, recorded)
        said = (before if recorded else None, after, flaky, recorded)
        assert ruled.flaky == flaky
        assert sum((ruled.new_failure, ruled.fixed, ruled.flipped)) <= 1, said
        # A flaky cell is never a new failure; a failing cell is new where it did not fail.
        was_broken = recorded and before in BROKEN
        assert ruled.new_failure == (not flaky and after in BROKEN and not was_broken), said
        assert ruled.fixed == (was_broken and after in ("pass", "xfail", "xpass")), said
        if not recorded:  # only added (compare's own), or a new failure
            assert not (ruled.fixed or ruled.flipped), said
        elif before == after:
            assert not (ruled.new_failure or ruled.fixed or ruled.flipped), said
        else:  # a change is filed: as the flake it is, a new failure, a fix or a flip
            assert ruled.flaky or ruled.new_failure or ruled.fixed or ruled.flipped, said
