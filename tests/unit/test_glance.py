"""The answer at a glance (issue 14, point 4): the host compiler and the driver count as
axes of their own where a run has several, however a compiler was named; the likely
culprit on any of them. Pure: results as a run writes them."""

from __future__ import annotations

from typing import Any

from cudamatrix.record.results import CellResult
from cudamatrix.reports.glance import axis_rates, likely_culprit, varying_axes


def _cell(variant: str, outcome: str, host: str | None, driver: str = "580.159.04") -> CellResult:
    data: dict[str, Any] = {
        "case": "c", "variant": variant, "toolkit": "12.4", "arch": "sm_80",
        "frontend": "nvcc" if host else "nvrtc", "outcome": outcome, "stage": "compile",
        "versions": {"host_compiler": host} if host else {},
        "device": {"driver": driver, "arch": "sm_90"},
        "stages": [{"stage": "compile", "status": "ok" if outcome == "pass" else "failed"}]}
    return CellResult.from_dict(data)


def test_rows_split_by_host_compiler_however_it_was_named() -> None:
    results = [_cell("a", "pass", "g++-11 11.4.0"), _cell("b", "fail", "/usr/bin/g++ 12.2.0"),
               _cell("c", "fail", "g++-12 12.2.0"), _cell("d", "pass", None)]
    assert varying_axes(results) == ["host compiler"]
    rates = {value: (good, total) for axis, value, good, total in axis_rates(results)
             if axis == "host compiler"}
    assert rates == {"": (1, 1), "g++ 11": (1, 1), "g++ 12": (0, 2)}  # one compiler, named twice
    assert likely_culprit(results) == "all 2 unexpected cells share host compiler g++ 12"


def test_the_driver_is_a_row_only_where_runners_differ() -> None:
    one = [_cell("a", "pass", None), _cell("b", "pass", None)]
    assert varying_axes(one) == []
    two = [_cell("a", "pass", None, "535.230.02"), _cell("b", "fail", None, "580.159.04"),
           _cell("c", "fail", None, "580.159.04")]
    assert varying_axes(two) == ["driver"]
    assert likely_culprit(two) == "all 2 unexpected cells share driver 580.159.04"
    assert likely_culprit(two) == "all 2 unexpected cells share driver 580.159.04"
