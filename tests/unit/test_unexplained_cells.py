"""A failing cell no rule explains is said, not hidden (issue 71, item 5): `cudamatrix
report` and a run's summary end with how many there are and which, so rules.toml can grow
from what real runs left unexplained."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO, cudamatrix_in_process
from cudamatrix.record.diagnose import unexplained
from cudamatrix.record.results import load_results

# A real record (the build frontend's cases on an H100) whose cuvec cell no rule explains.
BUILD_RECORD = REPO / "bench" / "evidence" / "build-h100" / "results.json"
UNEXPLAINED = "cuvec-sdist/pip-wheel-cudaarchs/13.0/sm_80"


def test_the_unexplained_cells_of_a_real_record() -> None:
    _, results = load_results(BUILD_RECORD)
    assert unexplained(results) == [UNEXPLAINED]


def test_report_lists_the_cells_no_rule_explains(tmp_path: Path) -> None:
    run = cudamatrix_in_process("report", str(BUILD_RECORD), "--out", str(tmp_path / "r"))
    assert f"1 failing cell no rule explains (rules.toml): {UNEXPLAINED}" in run.output


def test_the_published_report_rejudged_has_none(tmp_path: Path) -> None:
    """The published report's failing cells are each explained by a rule: its summary says
    nothing of unexplained cells."""
    run = cudamatrix_in_process("report", str(REPO / "reports" / "results.json"), "--rejudge",
                                "--known-bugs", "--out", str(tmp_path / "r"))
    assert "no rule explains" not in run.output
    # Its four passes whose cubin the H100 could not run are said beside the count.
    assert "pass=108 (4 compiled only: " in run.output and ") xfail=112" in run.output
    _, results = load_results(tmp_path / "r" / "results.json")
    assert unexplained(results) == []
