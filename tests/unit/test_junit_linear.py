"""Issue 79, break 13: junit.xml was written in time quadratic in the number of cases:
junitparser's JUnitXml.add_testsuite compares each new suite with every suite before it
(8,000 cases took 31.8x the CPU of 1,000; a 40,000-case shard was still merging at 900 s).
Measured here by counting, not by the clock: the junitparser calls made while writing
twice the cases, and the suites compared."""

from __future__ import annotations

import sys
from collections import Counter
from types import FrameType
from typing import Any

import junitparser.junitparser as junitparser_module
from junitparser import JUnitXml, TestSuite

from cudamatrix.config.plan import Cell
from cudamatrix.record.results import CellResult, RunInfo
from cudamatrix.reports.junit import junit_xml


def _results(cases: int) -> list[CellResult]:
    """`cases` cases of two cells each, one passing, one failing."""
    return [CellResult(cell=Cell(f"case{i}", "v", "13.0", arch, "nvrtc"),
                       outcome="pass" if arch == "sm_80" else "fail", stage="compile",
                       reached="compile", message="", reason="", expected="", diagnosis=None,
                       stages=(), seconds=0.5)
            for i in range(cases) for arch in ("sm_80", "sm_90")]


def _counted(cases: int) -> tuple[Counter[str], str]:
    """The junitparser functions called (by name, each call counted) while junit.xml of
    `cases` cases is written, and the document."""
    calls: Counter[str] = Counter()
    library = junitparser_module.__file__

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event == "call" and frame.f_code.co_filename == library:
            calls[frame.f_code.co_qualname] += 1

    info = RunInfo("2026-12-06T00:00:00", "2026-12-06T00:01:00", "pr", "wheels", "here", "1")
    sys.setprofile(profile)
    try:
        text = junit_xml(info, _results(cases))
    finally:
        sys.setprofile(None)
    return calls, text


def test_junit_is_written_in_linear_work() -> None:
    small, text = _counted(200)
    large, _ = _counted(400)
    # No suite is compared with another: each case is its own suite already.
    assert small["TestSuite.__eq__"] == 0 and large["TestSuite.__eq__"] == 0, \
        (small["TestSuite.__eq__"], large["TestSuite.__eq__"])
    # Twice the cases, at most about twice the library's work (quadratic: about four times).
    assert sum(large.values()) <= 2.1 * sum(small.values()), \
        (sum(small.values()), sum(large.values()), (large - small - small).most_common(5))
    document = JUnitXml.fromstring(text)
    suites = list(document)
    assert len(suites) == 200 and all(isinstance(s, TestSuite) for s in suites)
    assert (document.tests, document.failures, document.errors, document.skipped) == \
        (400, 200, 0, 0)
    assert (suites[0].tests, suites[0].failures) == (2, 1)
    assert document.time == 200.0
