"""The words a cell's verdict is said in: its outcome, and which outcomes are not what its
case expects. Kept apart from ``verdict`` (which decides them) so that the record
(``results``) can name them and ``verdict`` can read the record."""

from __future__ import annotations

from typing import Literal, get_args

Outcome = Literal["pass", "xfail", "xpass", "fail", "error", "skip"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
# The outcomes that are not what a case expects: a failure it does not expect, an error, a
# pass where it expects a failure.
UNEXPECTED_OUTCOMES: frozenset[Outcome] = frozenset({"fail", "error", "xpass"})
