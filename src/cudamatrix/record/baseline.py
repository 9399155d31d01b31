"""What changed since a previous run: new failures, fixes, flips, cells added and removed.

A matrix that is red for known reasons is useless as a gate unless a run says what
is new. With ``--baseline results.json`` the run compares itself cell by cell
(by cell id) and, by default, fails only on new failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import UserError
from .resource_changes import ResourceChange, resource_changes
from .results import CellResult, load_results
from .time_changes import TimeChange, recorded_timing, time_change

FAILING = frozenset({"fail", "error"})
WORKING = frozenset({"pass", "xfail", "xpass"})


@dataclass(frozen=True)
class Change:
    cell: str
    before: str | None
    after: str | None
    message: str = ""


@dataclass(frozen=True)
class BaselineDiff:
    source: str
    new_failures: list[Change] = field(default_factory=list)
    fixed: list[Change] = field(default_factory=list)
    flipped: list[Change] = field(default_factory=list)
    added: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)
    # Kernels that start to spill, or take more registers or shared memory: a finding of
    # their own, whatever the outcome did.
    resources: list[ResourceChange] = field(default_factory=list)
    # Timed kernels whose median moved beyond both runs' noise (time_changes.py).
    times: list[TimeChange] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.new_failures or self.fixed or self.flipped or self.added
                    or self.removed or self.resources or self.times)

    @property
    def slower(self) -> list[TimeChange]:
        return [c for c in self.times if c.slower]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_baseline(path: Path) -> dict[str, dict[str, Any]]:
    """The cells of an earlier results.json, by id, each read as every results file is
    (typed, damage named in one line): a baseline is often another job's artifact."""
    try:
        _, results = load_results(path)
    except UserError as exc:
        raise UserError(f"--baseline {exc}") from None
    return {r.cell.id: r.to_dict() for r in results}


def settle_xpass(results: Sequence[CellResult],
                 baseline: dict[str, dict[str, Any]] | None) -> list[CellResult]:
    """An expected failure that worked is "possibly fixed upstream" only against a baseline
    where that cell failed as expected. On its first run it is far likelier a wrong
    expectation, and a maintainer must hear of it: a `fail` saying so, not an exit 0."""
    settled = []
    for result in results:
        before = (baseline or {}).get(result.cell.id, {}).get("outcome")
        if result.outcome == "xpass" and before != "xfail":
            result = replace(result, outcome="fail", reason=(
                f"expected {result.expected}, but it worked, and no baseline shows it "
                "failing: check the expectation (an xpass is reported only against a "
                "--baseline where the cell was xfail)"))
        settled.append(result)
    return settled


def compare(source: str, before: dict[str, dict[str, Any]],
            after: Sequence[CellResult]) -> BaselineDiff:
    diff = BaselineDiff(source)
    now = {r.cell.id: r for r in after}
    for cell_id in sorted(set(before) | set(now)):
        old = before.get(cell_id, {}).get("outcome")
        result = now.get(cell_id)
        new = result.outcome if result else None
        message = (result.message or result.reason) if result else ""
        change = Change(cell_id, old, new, message)
        if new in FAILING and old not in FAILING:
            diff.new_failures.append(change)  # an added cell that fails is new, too
        if old is None:
            diff.added.append(change)
        elif new is None:
            diff.removed.append(change)
        elif old in FAILING and new in WORKING:
            diff.fixed.append(change)
        elif old != new and not (new in FAILING and old not in FAILING):
            diff.flipped.append(change)
        if result is not None and cell_id in before:
            recorded = before[cell_id].get("resources")
            diff.resources.extend(resource_changes(
                cell_id, recorded if isinstance(recorded, list) else [], result.resources))
            moved = time_change(cell_id, recorded_timing(before[cell_id]), result.timing)
            if moved is not None:
                diff.times.append(moved)
    return diff
