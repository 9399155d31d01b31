"""The verdict's rules that read outcomes alone: whether a cell's attempts make it flaky,
whether a cell is run again (--retries), what a cell is against a baseline's record of it,
and whether a run fails as --fail-on says. They are record/verdict.py's (which decides every
verdict and keeps the one rule here that makes a record: which attempt a retried cell
keeps), held apart only because the record (``CellResult.flaky``) and the baseline
(``compare``), which verdict.py reads, ask them too: here, below all three and importing
only the outcome words, no import runs back up. tests/unit/test_verdict_walk.py finds an
outcome grouping, the --fail-on word or the number of retries tested anywhere else than in
these two modules and where a record is drawn."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from .outcomes import AS_EXPECTED, FAILING, UNEXPECTED_OUTCOMES, WORKING

# What fails a run (--fail-on): any failed or erred cell, only a new failure against the
# baseline, or nothing once the record is written (a CI shard: the merge judges).
FailOn = Literal["any", "new", "never"]
FAIL_ON: tuple[FailOn, ...] = get_args(FailOn)


def is_flaky(outcome: str, stage: str, attempts: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a cell's attempts disagree (with each other or its last, `outcome` at
    `stage`) and one of them was what its case expects (passed, or failed as expected).
    Such a cell is marked, and never a new failure against a baseline; so attempts that
    only failed, however differently (a wrong answer, then a crash), are a failure: a
    regression is never softened into a flake."""
    said = [(a.get("outcome"), a.get("stage")) for a in attempts]
    return any(pair != (outcome, stage) for pair in said) and any(
        said_outcome in AS_EXPECTED for said_outcome, _ in [*said, (outcome, stage)])


def runs_again(outcome: str, attempts_before: int, retries: int) -> bool:
    """Whether a cell whose latest attempt ended `outcome`, after `attempts_before` earlier
    ones, is run again under --retries `retries`: only while it is not what its case
    expects (a pass or an expected failure is kept at once), at most `retries` times."""
    return outcome in UNEXPECTED_OUTCOMES and attempts_before < retries


@dataclass(frozen=True)
class AgainstBaseline:
    """What one cell is against the baseline's record of it, as `compare` files it."""

    # Its attempts disagreed (is_flaky): counted apart, never a new failure.
    flaky: bool
    # It fails now and did not (a cell the baseline lacks that fails is new, too).
    new_failure: bool
    # It failed in the baseline and works now.
    fixed: bool
    # Its outcome changed some other way.
    flipped: bool


def against_baseline(before: str | None, after: str, flaky: bool,
                     recorded: bool) -> AgainstBaseline:
    """A cell that ended `after` (`flaky` or not) against the baseline's outcome `before`
    for it, where the baseline `recorded` the cell at all (a cell it lacks is only added,
    or a new failure). A change is a new failure, a fix or a flip, never two of them."""
    fails_anew = after in FAILING and before not in FAILING
    fixed = recorded and before in FAILING and after in WORKING
    return AgainstBaseline(
        flaky=flaky, new_failure=fails_anew and not flaky, fixed=fixed,
        flipped=recorded and not fixed and before != after and not fails_anew)


def fail_on_of(said: str | None, allow_new_failures: bool, baseline: bool) -> FailOn:
    """What fails the run: --fail-on as `said`; --allow-new-failures is "never"; by default
    new failures where there is a `baseline`, any failure where there is none."""
    if allow_new_failures:
        return "never"
    for word in FAIL_ON:
        if said == word:
            return word
    return "new" if baseline else "any"


def exit_status(fail_on: FailOn, outcomes: Iterable[str], new_failures: int | None) -> int:
    """The run's exit status, 1 where it fails as `fail_on` says: never; only for a new
    failure where the run was compared with a baseline (`new_failures`, None without
    one); else for any cell that failed or erred (`outcomes`, every cell's)."""
    if fail_on == "never":
        return 0
    if fail_on == "new" and new_failures is not None:
        return 1 if new_failures else 0
    return 1 if any(outcome in FAILING for outcome in outcomes) else 0


def environment_fails_run(fail_on: FailOn) -> bool:
    """Whether a toolkit or library the run could not prepare fails it (exit status 2):
    unless --fail-on never, whose run is a CI shard's, its error cells judged by the
    merge."""
    return fail_on != "never"
