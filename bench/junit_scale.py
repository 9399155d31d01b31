"""junit.xml's CPU time at 1,000 and 8,000 cases (issue 79, break 13):
``python bench/junit_scale.py [CASES ...]``.

Each case is one suite of two cells (one passing, one failing), as a large corpus's run
writes them; the CPU seconds of `junit_xml` alone (the best of three), and their ratio to
the first size's: linear is the sizes' ratio (8x), the quadratic writer was 31.8x.
"""

from __future__ import annotations

import sys
import time

from cudamatrix.config.plan import Cell
from cudamatrix.record.results import CellResult, RunInfo
from cudamatrix.reports.junit import junit_xml


def _results(cases: int) -> list[CellResult]:
    return [CellResult(cell=Cell(f"case{i}", "v", "13.0", arch, "nvrtc"),
                       outcome="pass" if arch == "sm_80" else "fail", stage="compile",
                       reached="compile", message="ptxas error", reason="", expected="",
                       diagnosis=None, stages=(), seconds=0.5)
            for i in range(cases) for arch in ("sm_80", "sm_90")]


def cpu_seconds(cases: int) -> float:
    """The best of three: the CPU seconds junit_xml takes for `cases` cases."""
    info = RunInfo("2026-12-06T00:00:00", "2026-12-06T00:01:00", "pr", "wheels", "here", "1")
    results = _results(cases)
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        junit_xml(info, results)
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    sizes = [int(word) for word in sys.argv[1:]] or [1000, 8000]
    first = None
    for cases in sizes:
        seconds = cpu_seconds(cases)
        first = first or seconds
        print(f"{cases:>6} cases: {seconds:7.3f} CPU s, {seconds / first:5.1f}x the first")


if __name__ == "__main__":
    main()
