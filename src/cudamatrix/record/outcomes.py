"""The words a cell's verdict is said in: its outcome, and the groupings of outcomes every
part of the tool asks about (not what a case expects, what fails a run, what a report shows
as a failure). Kept apart from ``verdict`` (which decides them) so that the record
(``results``) can name them and ``verdict`` can read the record; kept here alone so that a
grouping is never written twice and drifts (the exit status, the progress line, the
JUnit file and a baseline once each wrote their own tuple)."""

from __future__ import annotations

from typing import Literal, get_args

Outcome = Literal["pass", "xfail", "xpass", "fail", "error", "skip"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
# The outcomes that are not what a case expects: a failure it does not expect, an error, a
# pass where it expects a failure. Such a cell is marked, and run again under --retries.
UNEXPECTED_OUTCOMES: frozenset[Outcome] = frozenset({"fail", "error", "xpass"})
# The outcomes that are what a case expects: a cell is flaky only where an attempt had one.
AS_EXPECTED: frozenset[Outcome] = frozenset({"pass", "xfail"})
# The outcomes that fail a run (its exit status without a baseline, a new failure against
# one), and that a progress line says with their message.
FAILING: frozenset[Outcome] = frozenset({"fail", "error"})
# The outcomes where the code under test did what it did without a tool breaking: a cell
# that failed before and is one of these now is fixed.
WORKING: frozenset[Outcome] = frozenset({"pass", "xfail", "xpass"})
# The outcomes a live progress bar keeps quiet about: nothing a reader must act on.
QUIET: frozenset[Outcome] = frozenset({"pass", "xfail", "skip"})
# The outcomes of a cell decided without doing its work (a toolkit without the tool its
# frontend needs, an arch out of its range): its seconds say nothing of what its kind of
# cell costs, so the ETA learns nothing from them.
NOT_RUN: frozenset[Outcome] = frozenset({"skip"})
# The outcomes a JUnit file writes as a failed test (pytest's strict xfail writes an
# unexpected pass so).
JUNIT_FAILURES: frozenset[Outcome] = frozenset({"fail", "xpass"})
