"""How a report names a row of cells: the toolkit and whatever else sets the row apart
(library version, host compiler, runner), shared by every report format."""

from __future__ import annotations

from ..config.plan import Cell


def row_label(cell: Cell) -> str:
    # An audit's rows are drivers: its "toolkit" column holds the driver branch.
    label = f"driver {cell.toolkit}" if cell.frontend == "audit" else cell.toolkit
    if cell.library:
        label += f" · {cell.library} {cell.library_version}"
    if cell.host_compiler:
        label += f" · {cell.host_compiler}"
    if cell.runner:
        label += f" · on {cell.runner}"
    return label
