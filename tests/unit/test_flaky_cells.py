"""Flaky cells (issue 60, point 4): a cell not as its case expects is run again where the
user asks (--retries); every attempt is recorded, a cell whose attempts disagree is flaky
in the record, the Markdown and the page, and never a new failure against a baseline;
history.json names the cells that flipped between runs of the same commit."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cudamatrix.cli import build_parser
from cudamatrix.record.baseline import Baseline, compare
from cudamatrix.record.history import PastRun, history_document
from cudamatrix.record.results import CellResult, load_results
from cudamatrix.reports.markdown import markdown_report

REPO = Path(__file__).resolve().parents[2]


def _published() -> tuple[object, list[CellResult]]:
    return load_results(REPO / "reports" / "results.json")


def _flaky(result: CellResult) -> CellResult:
    """`result` as the second attempt of a cell whose first failed at run."""
    return dataclasses.replace(result, attempts=(
        {"outcome": "fail", "stage": "run", "message": "CUDA_ERROR_LAUNCH_FAILED",
         "seconds": 1.0},))


def test_attempts_are_recorded_and_read_back() -> None:
    _, cells = _published()
    passed = next(r for r in cells if r.outcome == "pass")
    flaky = _flaky(passed)
    assert flaky.flaky and not passed.flaky
    again = CellResult.from_dict(flaky.to_dict())
    assert again.attempts == flaky.attempts and again.flaky
    assert flaky.to_dict()["flaky"] is True
    # Attempts that agree (a retried failure that failed alike) are no flake.
    failed = dataclasses.replace(passed, outcome="fail", stage="run", attempts=(
        {"outcome": "fail", "stage": "run", "message": "x"},))
    assert not failed.flaky


def test_a_flaky_cell_is_never_a_new_failure() -> None:
    _, cells = _published()
    passed = next(r for r in cells if r.outcome == "pass")
    baseline = Baseline({passed.cell.id: {"id": passed.cell.id, "outcome": "pass"}})
    broke = dataclasses.replace(passed, outcome="fail", stage="run")
    assert [c.cell for c in compare("b", baseline, [broke]).new_failures] == [passed.cell.id]
    flaky = dataclasses.replace(passed, attempts=(
        {"outcome": "error", "stage": "load", "message": "lost"},))
    diff = compare("b", baseline, [flaky])
    assert diff.new_failures == [] and [c.cell for c in diff.flaky] == [passed.cell.id]
    # Attempts that all failed, each differently, are a failure: never a flake (issue 68).
    failed_twice = dataclasses.replace(broke, attempts=(
        {"outcome": "error", "stage": "load", "message": "lost"},))
    diff = compare("b", baseline, [failed_twice])
    assert diff.flaky == [] and [c.cell for c in diff.new_failures] == [passed.cell.id]


def test_the_markdown_marks_each_flaky_cell() -> None:
    info, cells = _published()
    target = next(r for r in cells if r.outcome == "pass")
    text = markdown_report(info, [_flaky(r) if r is target else r for r in cells])
    assert "## 🔁 Flaky (1)" in text
    assert f"- `{target.cell.id}`: fail at run → pass" in text
    assert "1 flaky" in text.splitlines()[2]
    assert "🔁 flaky: its attempts disagreed" in text.splitlines()[4]  # the legend
    grid = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    assert grid.count("🔁") == 1
    assert "🔁" not in markdown_report(info, cells)


def test_history_names_a_flip_between_runs_of_the_same_commit() -> None:
    def run(outcome: str, revision: str, when: str) -> PastRun:
        return PastRun(when, revision, "pr", {"c/v/13.0/sm_80": (outcome, "run"),
                                              "c/w/13.0/sm_80": ("pass", "run")})
    same = history_document([run("pass", "abc", "2026-11-01"), run("fail", "abc", "2026-11-02")])
    assert same["flaky_flips"] == ["c/v/13.0/sm_80"]
    moved = history_document([run("pass", "abc", "2026-11-01"), run("fail", "def", "2026-11-02")])
    assert "flaky_flips" not in moved


@pytest.mark.parametrize(("value", "ok"), [("0", True), ("1", True), ("5", True), ("6", False),
                                           ("-1", False), ("one", False)])
def test_retries_are_bounded(value: str, ok: bool, capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    if ok:
        assert parser.parse_args(["run", "--retries", value]).retries == int(value)
    else:
        with pytest.raises(SystemExit):
            parser.parse_args(["run", "--retries", value])
        assert "--retries" in capsys.readouterr().err


def test_a_regression_failing_differently_on_every_attempt_is_a_new_failure(
        tmp_path: Path) -> None:
    """Issue 68, item 1: a cell that failed at run, then crashed at load, never met its
    case's expectation: it is a failure (a new one against a baseline where it passed, exit
    status 1), not a flake; one that failed and then passed is the flake."""
    from conftest import cudamatrix_in_process

    document = json.loads((REPO / "reports" / "results.json").read_text())
    passed = next(c for c in document["cells"] if c["outcome"] == "pass")
    passed.update(outcome="error", stage="load", message="CUDA_ERROR_ILLEGAL_ADDRESS",
                  attempts=[{"outcome": "fail", "stage": "run", "message": "wrong sum",
                             "seconds": 1.0}])
    regressed = tmp_path / "results.json"
    regressed.write_text(json.dumps(document))
    cell = CellResult.from_dict(passed)
    assert not cell.flaky and not cell.to_dict()["flaky"]
    assert dataclasses.replace(cell, outcome="pass", stage="run").flaky

    run = cudamatrix_in_process("report", str(regressed), "--out", str(tmp_path / "r"),
                                "--baseline", str(REPO / "reports" / "results.json"))
    assert run.code == 1, run.output[-2000:]
    written = json.loads((tmp_path / "r" / "results.json").read_text())
    assert not next(c for c in written["cells"] if c["id"] == passed["id"])["flaky"]
    text = (tmp_path / "r" / "COMPATIBILITY.md").read_text()
    assert "## 🔁 Flaky" not in text and passed["id"] in text.split("New failures", 1)[1]
