"""badge.json: a shields.io endpoint badge for a README ("182/190 as expected").

Published beside the reports, so a project shows its CUDA support where its users look:
``https://img.shields.io/endpoint?url=<pages>/badge.json``. Skipped cells are left out of
both numbers (they could not be decided there) and counted beside them, so "84/84" never
hides 60 cells that did not run; any unexpected cell turns it red, a run that decided
nothing grey.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..record.results import CellResult
from .formats import ReportFormat
from .glance import UNEXPECTED

LABEL = "CUDA matrix"


def badge(results: Sequence[CellResult], label: str = LABEL) -> dict[str, Any]:
    decided = [r for r in results if r.outcome != "skip"]
    unexpected = sum(r.outcome in UNEXPECTED for r in decided)
    if not decided:
        return {"schemaVersion": 1, "label": label, "message": "no cell decided",
                "color": "lightgrey"}
    skipped = len(results) - len(decided)
    return {"schemaVersion": 1, "label": label,
            "message": f"{len(decided) - unexpected}/{len(decided)} as expected"
            + (f", {skipped} skipped" if skipped else ""),
            "color": "red" if unexpected else "brightgreen"}



FORMAT = ReportFormat("badge.json", lambda run: json.dumps(badge(run.results)))
