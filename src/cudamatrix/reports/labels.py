"""How a report names a row of cells: the toolkit and whatever else sets the row apart
(library version, host compiler, Python, runner), shared by every report format."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ..config.plan import Cell

CONTEXT = 12  # characters kept before where a cut name first differs from its look-alikes


def row_label(cell: Cell) -> str:
    # An audit's rows are drivers: its "toolkit" column holds the driver branch.
    label = f"driver {cell.toolkit}" if cell.frontend == "audit" else cell.toolkit
    if cell.library:
        label += f" · {cell.library} {cell.library_version}"
    if cell.host_compiler:
        label += f" · {cell.host_compiler}"
    if cell.python:
        label += f" · Python {cell.python}"
    if cell.runner:
        label += f" · on {cell.runner}"
    return label


def _shared(one: str, other: str) -> int:
    """How many characters two names share at their start."""
    return next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b),
                min(len(one), len(other)))


def _cut(name: str, limit: int) -> str:
    return name if len(name) <= limit else name[:limit - 1] + "…"


def _from_where_it_differs(name: str, alike: Iterable[str], limit: int) -> str:
    """`name`'s head, then its text from a little before where it first differs from the
    nearest of `alike` (the names its cut reads as): the part that tells them apart."""
    differs = max(_shared(name, other) for other in alike if other != name)
    head = name[:limit // 3]
    start = max(len(head), differs - CONTEXT)
    return _cut(f"{head}…{name[start:]}", limit)


def distinct_labels(names: Iterable[str], limit: int) -> dict[str, str]:
    """Each name as a table shows it in about `limit` characters, no two alike: a name
    that fits whole; else its start; where starts read the same (a C++ template's
    instantiations: CUTLASS's kernels share their first hundreds of characters), its head
    and the text from where it differs; where even that reads the same, the whole name.
    Cut at the start alone, two kernels' rows read as one kernel with two sets of figures."""
    wanted = sorted(set(names))
    labels = {name: _cut(name, limit) for name in wanted}
    for _ in range(2):  # the start, then from where they differ, then whole
        grouped: dict[str, list[str]] = defaultdict(list)
        for name, label in labels.items():
            grouped[label].append(name)
        alike = [group for group in grouped.values() if len(group) > 1]
        if not alike:
            break
        for group in alike:
            for name in group:
                labels[name] = (_from_where_it_differs(name, group, limit)
                                if labels[name] == _cut(name, limit) else name)
    return labels
