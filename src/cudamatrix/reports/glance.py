"""The answer at a glance: the project's support matrix, before any per-case table.

Per toolkit x arch, across every case: what really happened (runs on a GPU, loads,
builds, or where it stopped), counted, with whether that was what the cases expected as
a second mark. Then the rate per axis value, the value every failure shares (the likely
culprit), and a command that repeats a failing cell.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..plan import Cell
from ..results import CellResult
from ..versions import Arch

UNEXPECTED = frozenset({"fail", "error", "xpass"})


def happened(result: CellResult) -> str:
    """What the build really did, whatever was expected: runs, loads, builds, or the stage
    it failed at; skipped when it could not be decided here."""
    if result.outcome == "skip":
        return "skipped"
    last_ok = ""
    for stage in result.stages:
        if stage.status == "ok":
            last_ok = stage.stage
        elif stage.status not in ("skipped",):
            return f"fails at {stage.stage}"
    return {"run": "runs", "load": "loads"}.get(last_ok, "builds")


@dataclass(frozen=True)
class GlanceCell:
    counts: dict[str, int]
    unexpected: int

    def text(self) -> str:
        order = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        said = ", ".join(f"{what} {n}" for what, n in order)
        mark = f" · {self.unexpected} unexpected" if self.unexpected else " · as expected"
        return said + mark


def support_matrix(results: Sequence[CellResult]
                   ) -> tuple[list[str], list[tuple[str, dict[str, GlanceCell]]]]:
    """(archs, rows): one row per toolkit, one column per arch."""
    grouped: dict[tuple[str, str], list[CellResult]] = defaultdict(list)
    for result in results:
        grouped[(result.cell.toolkit, result.cell.arch)].append(result)
    archs = sorted({a for _, a in grouped}, key=Arch.parse)
    toolkits = sorted({t for t, _ in grouped},
                      key=lambda v: [int(p) if p.isdigit() else -1 for p in v.split(".")])
    rows = []
    for toolkit in toolkits:
        row = {}
        for arch in archs:
            cells = grouped.get((toolkit, arch), [])
            if cells:
                row[arch] = GlanceCell(dict(Counter(happened(c) for c in cells)),
                                       sum(c.outcome in UNEXPECTED for c in cells))
        rows.append((toolkit, row))
    return archs, rows


def axis_rates(results: Sequence[CellResult]) -> list[tuple[str, str, int, int]]:
    """(axis, value, as expected, decided) per toolkit and arch value; skips not counted."""
    rates = []
    for axis in ("toolkit", "arch"):
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for result in results:
            if result.outcome == "skip":
                continue
            value = getattr(result.cell, axis)
            counts[value][1] += 1
            counts[value][0] += result.outcome not in UNEXPECTED
        for value, (good, total) in sorted(counts.items()):
            rates.append((axis, value, good, total))
    return rates


def likely_culprit(results: Sequence[CellResult]) -> str | None:
    """The axis value every unexpected cell shares, when the rest of that axis is clean."""
    bad = [r for r in results if r.outcome in UNEXPECTED]
    if len(bad) < 2:
        return None
    for axis in ("toolkit", "arch", "library_version"):
        values = {getattr(r.cell, axis) for r in bad}
        if len(values) == 1 and None not in values:
            value = values.pop()
            spread = {getattr(r.cell, axis) for r in results}
            if len(spread) > 1:
                return f"all {len(bad)} unexpected cells share {axis} {value}"
    return None


def repro(cell: Cell, tier: str) -> str:
    """The command that runs this one cell again."""
    return f"cudamatrix run --tier {tier} --cell {cell.id.split('@')[0]}"
