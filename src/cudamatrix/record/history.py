"""The last runs' outcomes, per cell: what each cell did in each of the last N runs, and for
a cell that flipped, the first run (commit, date) where it did.

A published report keeps ``history.json`` beside ``results.json``; the next merge reads the
previous one (from the last Pages deploy or an artifact), adds its own run and keeps the
last `limit` runs, so the file stays bounded however long the project runs. Locally
``cudamatrix report --history DIR...`` builds the same from old results folders.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common import recorded
from ..config.defaults import DEFAULT_HISTORY_RUNS
from ..errors import UserError
from .results import CellResult, RunInfo, load_results

SCHEMA = "cudamatrix-history"
# A history file is read whole: one far beyond N runs of a nightly tier is not one of ours.
MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class PastRun:
    """One run as history keeps it: when, from which commit, and each cell's outcome and
    the stage that decided it."""

    finished: str
    revision: str
    tier: str
    outcomes: dict[str, tuple[str, str]]  # cell id -> (outcome, stage)
    # cell id -> its kernel's median microseconds, for the cells that were timed: a
    # kernel's time across runs, beside its outcome.
    times: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        said: dict[str, Any] = {
            "finished": self.finished, "revision": self.revision, "tier": self.tier,
            "outcomes": {cell: list(pair) for cell, pair in self.outcomes.items()}}
        if self.times:
            said["median_us"] = dict(self.times)
        return said

    @classmethod
    def from_dict(cls, data: object) -> PastRun:
        if not isinstance(data, dict):
            raise ValueError(f"a run: expected an object, got {type(data).__name__}")
        table = recorded.table(data, "outcomes") or {}
        outcomes = {}
        for cell, pair in table.items():
            if not (isinstance(pair, list) and len(pair) == 2
                    and all(isinstance(p, str) for p in pair)):
                raise ValueError(f"outcomes.{cell}: expected [outcome, stage], got {pair!r:.60}")
            outcomes[str(cell)] = (pair[0], pair[1])
        times = {}
        medians = recorded.table(data, "median_us") or {}
        for cell in medians:
            times[str(cell)] = recorded.number(medians, cell, None, where="median_us.")
            if not 0 < times[str(cell)] < recorded.MAX_MICROSECONDS:
                raise ValueError(f"median_us.{cell}: expected microseconds, got "
                                 f"{medians[cell]!r:.60}")
        return cls(recorded.text(data, "finished"), recorded.text(data, "revision", ""),
                    recorded.text(data, "tier", ""), outcomes, times)

    @classmethod
    def of(cls, info: RunInfo, results: Iterable[CellResult]) -> PastRun:
        results = list(results)
        return cls(info.finished, info.revision, info.tier,
                   {r.cell.id: (r.outcome, r.stage) for r in results},
                   {r.cell.id: float(r.timing["median_us"]) for r in results if r.timing})


@dataclass(frozen=True)
class Flip:
    """A cell whose outcome changed: what it was, what it became, and the first run
    (oldest first) where it became that and stayed so."""

    cell: str
    before: str
    after: str
    since: PastRun
    # The run before it had the same commit: the flip came from no change of the code, a
    # flaky cell (or a change of the machine).
    same_inputs: bool = False


def _read(path: Path) -> list[PastRun]:
    """The runs in a history.json, or the one run of a results.json (or of a folder with
    either); refused with one line naming the file."""
    if path.is_dir():
        found = [path / n for n in ("history.json", "results.json") if (path / n).is_file()]
        if not found:
            raise UserError(f"{path}: --history: no history.json or results.json in it")
        path = found[0]
    try:
        data = recorded.read_json(path, MAX_BYTES)
    except recorded.UnreadableRecord as exc:
        raise UserError(f"{path}: --history: {exc}") from None
    if isinstance(data, dict) and data.get("schema") == "cudamatrix-results":
        info, results = load_results(path)
        return [PastRun.of(info, results)]
    if not isinstance(data, dict) or data.get("schema") != SCHEMA \
            or not isinstance(data.get("runs"), list):
        raise UserError(f"{path}: --history: not a cudamatrix history or results file")
    try:
        return [PastRun.from_dict(run) for run in data["runs"]]
    except ValueError as exc:
        raise UserError(f"{path}: --history: {exc}") from None


def check_history(paths: Sequence[Path], now: str) -> None:
    """Read every --history file before a run, as a --baseline is: one that does not read,
    or holds a run finished after `now` (an ISO date: a clock or a file from the future,
    which would push this run out of history.json and turn flips around), is refused in
    one line naming it, before any cell runs."""
    for path in paths:
        for run in _read(path):
            if run.finished > now:
                raise UserError(f"{path}: --history: a run finished {run.finished:.40}, "
                                f"after this one ({now}): not a history of this run")


def gather(paths: Sequence[Path], now: PastRun | None, limit: int = DEFAULT_HISTORY_RUNS
           ) -> list[PastRun]:
    """The runs in `paths` and `now`, oldest first, each run once (by date and commit),
    the last `limit` of them (at least one); `now` is always kept, and last: what the
    flips are computed from."""
    runs: dict[tuple[str, str, str], PastRun] = {}
    for path in paths:
        for run in _read(path):
            runs[(run.finished, run.revision, run.tier)] = run
    if now is None:
        return sorted(runs.values(), key=lambda r: r.finished)[-max(1, limit):]
    runs.pop((now.finished, now.revision, now.tier), None)
    earlier = sorted((r for r in runs.values() if r.finished <= now.finished),
                     key=lambda r: r.finished)
    return [*earlier, now][-max(1, limit):]


def history_document(runs: Sequence[PastRun]) -> dict[str, Any]:
    """history.json: the runs kept, and the cells of the latest that flipped since the run
    before with the same commit (`flaky_flips`: their inputs did not change, they did)."""
    said: dict[str, Any] = {"schema": SCHEMA, "schema_version": 1,
                            "runs": [r.to_dict() for r in runs]}
    flaky = [f.cell for f in flips(runs) if f.same_inputs and f.since is runs[-1]]
    if flaky:
        said["flaky_flips"] = flaky
    return said


def cell_history(runs: Sequence[PastRun], cell: str) -> list[tuple[str, str, str]]:
    """(finished, revision, outcome) of `cell` in each run, oldest first; '' where the run
    did not have the cell."""
    return [(r.finished, r.revision, r.outcomes.get(cell, ("", ""))[0]) for r in runs]


def flips(runs: Sequence[PastRun]) -> list[Flip]:
    """Every cell of the latest run whose outcome differs from an earlier run's: the run
    where its present outcome began (the first of the unbroken stretch up to now)."""
    if len(runs) < 2:
        return []
    latest = runs[-1]
    found = []
    for cell, (outcome, _) in sorted(latest.outcomes.items()):
        start = len(runs) - 1
        while start > 0 and runs[start - 1].outcomes.get(cell, ("", ""))[0] == outcome:
            start -= 1
        if start == 0:
            continue  # the same in every run kept
        before = runs[start - 1].outcomes.get(cell, ("", ""))[0]
        if not before:
            continue  # new in this stretch: no earlier outcome to flip from
        previous = runs[start - 1]
        found.append(Flip(cell, before, outcome, runs[start],
                          bool(previous.revision) and previous.revision == runs[start].revision))
    return found
