"""The works heatmap tells "as expected" from "works" (issue 70, 4): a square whose cells
all fail as their case expects is the expected failures' colour, not deep red under a
headline saying all is as expected; red is kept for squares with unexpected cells."""

from __future__ import annotations

from typing import Any

import pytest

from cudamatrix.record.results import CellResult
from cudamatrix.reports.charts import SQUARE_COLOURS, run_charts, square_state
from cudamatrix.reports.symbols import OUTCOME_COLOURS


def _cell(toolkit: str, outcome: str, failed_at: str | None) -> CellResult:
    stages: list[dict[str, Any]] = [{"stage": "compile", "status": "ok"}]
    if failed_at:
        stages = [{"stage": failed_at, "status": "failed", "message": "error"}]
    return CellResult.from_dict({"case": "c", "variant": f"v-{len(stages)}-{outcome}",
                                 "toolkit": toolkit, "arch": "sm_90", "frontend": "nvcc",
                                 "outcome": outcome, "stage": failed_at or "compile",
                                 "stages": stages})


@pytest.mark.parametrize(("good", "total", "unexpected", "state"), [
    (12, 12, 0, "works"),
    (0, 12, 0, "fails as expected"),
    (5, 12, 0, "works in part, as expected"),
    (0, 12, 1, "not as expected"),
    (12, 12, 2, "not as expected"),
])
def test_square_state(good: int, total: int, unexpected: int, state: str) -> None:
    assert square_state(good, total, unexpected) == state


def test_expected_failures_are_not_painted_red() -> None:
    cells = [_cell("11.8", "xfail", "compile"), _cell("12.8", "pass", None),
             _cell("13.0", "pass", None), _cell("13.0", "xfail", "compile"),
             _cell("13.5", "fail", "compile")]
    (works,) = [c for c in run_charts(cells) if c.id == "works"]
    values = {v["toolkit"]: v for v in works.spec["data"]["values"]}
    assert {t: v["state"] for t, v in values.items()} == {
        "11.8": "fails as expected", "12.8": "works", "13.0": "works in part, as expected",
        "13.5": "not as expected"}
    assert values["11.8"]["label"] == "0/1" and values["13.5"]["label"] == "0/1!"
    scale = works.spec["layer"][0]["encoding"]["color"]["scale"]
    colour = dict(zip(scale["domain"], scale["range"], strict=True))
    assert colour == SQUARE_COLOURS
    assert colour["fails as expected"] == OUTCOME_COLOURS["xfail"]
    assert colour["not as expected"] == OUTCOME_COLOURS["fail"]
    assert colour["works"] == OUTCOME_COLOURS["pass"]
    assert len(set(colour.values())) == len(colour)
