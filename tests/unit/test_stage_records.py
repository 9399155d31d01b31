"""A stage record read back (results.json, a cell file, a cache entry, a prebuilt folder)
has a stage and a status this tool knows, as typed; anything else is refused, so a record
from elsewhere cannot make up an outcome the judge was never written for."""

from __future__ import annotations

import pytest

from cudamatrix.stages.cell.result import STAGE_NAMES, STATUSES, StageResult


def test_known_records_round_trip() -> None:
    for stage in STAGE_NAMES:
        for status in STATUSES:
            record = StageResult(stage, status, "m", "log", 1.5, {"k": 1})
            assert StageResult.from_dict(record.to_dict()) == record


@pytest.mark.parametrize("data", [
    {"stage": "compile", "status": "passed"},
    {"stage": "link", "status": "ok"},
    {"stage": "compile"},
])
def test_an_unknown_stage_or_status_is_refused(data: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="not a stage record"):
        StageResult.from_dict(dict(data))
