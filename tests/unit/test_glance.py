"""The answer at a glance (issue 14, point 4): the host compiler and the driver count as
axes of their own where a run has several, however a compiler was named; the likely
culprit on any of them. Pure: results as a run writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cudamatrix.record.results import CellResult
from cudamatrix.reports.glance import (
    axis_rates,
    host_compiler,
    host_compilers,
    likely_culprit,
    nvcc_default,
    varying_axes,
)


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
    # A merged run's variants, each on two runners: the newer driver fails both.
    two = [_cell("a", "pass", None, "535.230.02"), _cell("a", "fail", None, "580.159.04"),
           _cell("b", "pass", None, "535.230.02"), _cell("b", "fail", None, "580.159.04")]
    assert varying_axes(two) == ["driver"]
    assert likely_culprit(two) == "all 2 unexpected cells share driver 580.159.04"
    assert likely_culprit(two) == "all 2 unexpected cells share driver 580.159.04"


# Issue 69: the glance's culprit and host-compiler rows, on real runs' records.
REPO = Path(__file__).resolve().parents[2]


def _recorded(path: str) -> list[CellResult]:
    data = json.loads((REPO / path).read_text())
    return [CellResult.from_dict(cell) for cell in data["cells"]]


def test_a_culprit_is_a_value_that_varied_beside_the_failures() -> None:
    """The published CUDA 13.5 run: its seven failures are all sm_80, and each failing
    variant ran sm_90 too, which passed: sm_80 is the culprit. The same record with those
    variants planned on sm_80 alone (their other archs dropped) has the same seven failures
    and other cases' sm_90 cells, but nothing there set sm_80 apart: no culprit."""
    results = _recorded("tests/data/published-2026-11-22-toolkit-13.5.json")
    assert likely_culprit(results) == "all 7 unexpected cells share arch sm_80"
    failing = {(r.cell.case, r.cell.variant) for r in results if r.outcome == "fail"}
    only_sm80 = [r for r in results
                 if (r.cell.case, r.cell.variant) not in failing or r.cell.arch == "sm_80"]
    assert {r.cell.arch for r in only_sm80} > {"sm_80"}  # the run still has other archs
    assert likely_culprit(only_sm80) is None


def test_the_default_host_compiler_is_named_as_the_run_names_it() -> None:
    """The published H100 run: CUDA 13.0's and 13.5's nvcc took the host compiler by
    themselves (no -ccbin, none recorded) while 12.4's recorded the same `g++` as
    "g++ 12.2.0": the glance counted them under an empty name beside "g++ 12"."""
    results = _recorded("reports/results.json")
    by_default = [r for r in results if "nvcc" in r.versions
                  and "host_compiler" not in r.versions and r.outcome != "skip"]
    assert {r.cell.toolkit for r in by_default} == {"13.0", "13.5"}
    rates = {value: total for axis, value, _, total in axis_rates(results)
             if axis == "host compiler"}
    assert set(rates) == {"", "clang++ 19", "g++ 11", "g++ 12"}
    recorded_12 = [r for r in results if host_compiler(r) == "g++ 12" and r.outcome != "skip"]
    assert rates["g++ 12"] == len(recorded_12) + len(by_default)
    # A record that names no plain g++ says what it knows: nvcc chose.
    assert nvcc_default(by_default) == "nvcc's default"
    assert {value for axis, value, _, _ in axis_rates(by_default)
            if axis == "host compiler"} == set()  # one value: no row of its own
    assert host_compilers(by_default)(by_default[0]) == "nvcc's default"
