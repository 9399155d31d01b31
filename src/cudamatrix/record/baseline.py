"""What changed since a previous run: new failures, fixes, flips, cells added and removed.

A matrix that is red for known reasons is useless as a gate unless a run says what
is new. With ``--baseline results.json`` the run compares itself cell by cell
(by cell id) and, by default, fails only on new failures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import UserError
from .resource_changes import ResourceChange, resource_changes
from .results import CellResult, load_results
from .time_changes import TimeChange, recorded_timing, time_change
from .verdict_rules import against_baseline


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
    # Cells whose attempts (--retries) disagreed: counted apart, never new failures.
    flaky: list[Change] = field(default_factory=list)
    # Kernels that start to spill, or take more registers or shared memory: a finding of
    # their own, whatever the outcome did.
    resources: list[ResourceChange] = field(default_factory=list)
    # Timed kernels whose median moved beyond both runs' noise (time_changes.py).
    times: list[TimeChange] = field(default_factory=list)
    # Baseline cells this run did not select (another tier's, another driver label's):
    # neither removed nor compared, only counted.
    outside: int = 0

    @property
    def empty(self) -> bool:
        return not (self.new_failures or self.fixed or self.flipped or self.added
                    or self.removed or self.flaky or self.resources or self.times)

    @property
    def slower(self) -> list[TimeChange]:
        return [c for c in self.times if c.slower]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Baseline:
    """An earlier run's cells by id, with the tier and runner labels it ran: a pull
    request's pr tier on one driver is compared with a nightly's cells of that tier and
    label, and what the nightly ran besides is outside the comparison, not "removed"."""

    cells: dict[str, dict[str, Any]]
    tier: str = ""
    labels: frozenset[str] = frozenset()

    def match(self, cell_id: str, run_labels: frozenset[str]) -> dict[str, Any] | None:
        """The baseline's record of `cell_id`: the same id, or the same cell under the one
        runner label either side ran on (a merge names the runner in the id only where it
        merged several)."""
        found = self.cells.get(cell_id)
        if found is not None:
            return found
        bare, _, label = cell_id.partition("@")
        if not label and len(run_labels) == 1:
            found = self.cells.get(f"{bare}@{next(iter(run_labels))}")
        if found is None and label and label in self.labels and len(self.labels) == 1:
            found = self.cells.get(bare)
        return found


def runner_labels(said: str) -> frozenset[str]:
    """RunInfo.runner_label's labels (a merge joins several with ", ")."""
    return frozenset(label for label in said.split(", ") if label)


def load_baseline(path: Path) -> Baseline:
    """The cells of an earlier results.json, by id, each read as every results file is
    (typed, damage named in one line): a baseline is often another job's artifact."""
    try:
        info, results = load_results(path)
    except UserError as exc:
        raise UserError(f"--baseline {exc}") from None
    return Baseline({r.cell.id: r.to_dict() for r in results}, info.tier,
                    runner_labels(info.runner_label))


@dataclass(frozen=True)
class RunSelection:
    """What a run narrowed its tier to (--case, --variant, --toolkit, --arch, --cell,
    --shard): a baseline cell outside it was not asked for, so it is not "removed" (a
    subset run against a full baseline listed every other cell so)."""

    cases: frozenset[str] = frozenset()
    variants: frozenset[str] = frozenset()
    toolkits: frozenset[str] = frozenset()
    archs: frozenset[str] = frozenset()
    cell_ids: frozenset[str] = frozenset()
    # A shard's cells are a round robin of the whole plan: which of the baseline's were
    # its own the ids cannot say, so the merge of every shard judges what was removed.
    sharded: bool = False

    def asked_for(self, cell_id: str, record: Mapping[str, Any]) -> bool:
        if self.sharded:
            return False
        if self.cell_ids and cell_id.partition("@")[0] not in self.cell_ids:
            return False
        return all(not wanted or str(record.get(key)) in wanted
                   for wanted, key in ((self.cases, "case"), (self.variants, "variant"),
                                       (self.toolkits, "toolkit"), (self.archs, "arch")))


def compare(source: str, before: Baseline, after: Sequence[CellResult], tier: str = "",
            labels: frozenset[str] = frozenset(),
            selection: RunSelection | None = None) -> BaselineDiff:
    """`after` (a run of `tier` on the runners `labels`, narrowed to `selection`) cell by
    cell against `before`. A baseline cell the run did not select is "removed" only where
    the baseline ran the same tier on one of the same runners and the run's selection asked
    for it; else it is outside the comparison, counted."""
    selection = selection or RunSelection()
    diff = BaselineDiff(source)
    matched: set[str] = set()
    for result in sorted(after, key=lambda r: r.cell.id):
        cell_id = result.cell.id
        old_record = before.match(cell_id, labels)
        if old_record is not None:
            matched.add(str(old_record.get("id", cell_id)))
        old = (old_record or {}).get("outcome")
        change = Change(cell_id, old, result.outcome, result.message or result.reason)
        ruled = against_baseline(old, result.outcome, result.flaky, old_record is not None)
        for filed, where in ((ruled.flaky, diff.flaky), (ruled.new_failure, diff.new_failures),
                             (old_record is None, diff.added), (ruled.fixed, diff.fixed),
                             (ruled.flipped, diff.flipped)):
            if filed:
                where.append(change)
        if old_record is not None:
            recorded = old_record.get("resources")
            diff.resources.extend(resource_changes(
                cell_id, recorded if isinstance(recorded, list) else [], result.resources))
            moved = time_change(cell_id, recorded_timing(old_record), result.timing)
            if moved is not None:
                diff.times.append(moved)
    same_tier = not before.tier or not tier or before.tier == tier
    outside = 0
    for cell_id in sorted(set(before.cells) - matched):
        label = cell_id.partition("@")[2] or (next(iter(before.labels))
                                              if len(before.labels) == 1 else "")
        if same_tier and (not labels or not label or label in labels) \
                and selection.asked_for(cell_id, before.cells[cell_id]):
            diff.removed.append(Change(cell_id, before.cells[cell_id].get("outcome"), None))
        else:
            outside += 1
    return replace(diff, outside=outside)
