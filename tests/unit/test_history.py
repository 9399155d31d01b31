"""History and the badge (issue 25, points 3 and 4): the last N runs kept, bounded; a
flipped cell names the first run (date, commit) of its present outcome; the command line
builds it from old results folders and refuses what is not one, naming it; badge.json is a
shields.io endpoint from the cells' outcomes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudamatrix.errors import UserError
from cudamatrix.record.history import PastRun, cell_history, flips, gather, history_document
from cudamatrix.record.results import CellResult
from cudamatrix.reports.badge import badge

REPO = Path(__file__).resolve().parents[2]


def _run(day: int, outcomes: dict[str, str]) -> PastRun:
    return PastRun(f"2026-11-{day:02d}T03:17:00+00:00", f"{day:040x}", "nightly",
                   {cell: (outcome, "run") for cell, outcome in outcomes.items()})


def test_history_keeps_the_last_n_runs_each_once(tmp_path: Path) -> None:
    runs = [_run(day, {"c/v/13.0/sm_90": "pass"}) for day in range(1, 26)]
    old = tmp_path / "history.json"
    old.write_text(json.dumps(history_document(runs[:24])))
    kept = gather([old, old], runs[24], limit=20)  # the same file twice counts once
    assert [r.finished for r in kept] == [r.finished for r in runs[5:]]


def test_a_flip_names_the_first_run_of_the_present_outcome() -> None:
    runs = [_run(1, {"a": "pass", "b": "fail", "c": "pass"}),
            _run(2, {"a": "pass", "b": "pass", "c": "pass"}),
            _run(3, {"a": "fail", "b": "fail", "c": "pass", "d": "fail"}),
            _run(4, {"a": "fail", "b": "fail", "c": "pass", "d": "pass"})]
    found = {f.cell: f for f in flips(runs)}
    assert set(found) == {"a", "b", "d"}  # c never changed
    assert (found["a"].before, found["a"].after, found["a"].since.revision) == (
        "pass", "fail", f"{3:040x}")
    assert found["b"].since.finished.startswith("2026-11-03")  # the latest stretch, not day 1
    assert found["d"].since.finished.startswith("2026-11-04")
    assert cell_history(runs, "d") == [(r.finished, r.revision, o) for r, o in
                                       zip(runs, ["", "", "fail", "pass"], strict=True)]


@pytest.mark.parametrize("text, said", [
    ("{", "not JSON"),
    ('{"schema": "something-else"}', "not a cudamatrix history or results file"),
    ('{"schema": "cudamatrix-history", "runs": [{"finished": "x", "outcomes": {"a": 1}}]}',
     r"expected \[outcome, stage\]"),
])
def test_what_is_not_a_history_is_refused_naming_it(tmp_path: Path, text: str, said: str
                                                     ) -> None:
    path = tmp_path / "history.json"
    path.write_text(text)
    with pytest.raises(UserError, match=said) as caught:
        gather([path], None)
    assert str(path) in str(caught.value)


def test_report_history_from_old_results_folders(tmp_path: Path) -> None:
    """`cudamatrix report --history DIR...`: the kept H100 run, and an older copy of it in
    which every skipped cell passed; history.json and the page say which cells flipped."""
    data = json.loads((REPO / "reports" / "results.json").read_text())
    failing = {c["id"] for c in data["cells"] if c["outcome"] == "skip"}
    assert failing
    for cell in data["cells"]:
        if cell["outcome"] == "skip":
            cell["outcome"] = "pass"
    data["run"].update(finished="2026-11-01T03:17:00+00:00", revision="b" * 40)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "results.json").write_text(json.dumps(data))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "cudamatrix", "report",
                           str(REPO / "reports" / "results.json"), "--out", str(out),
                           "--history", str(tmp_path / "old")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr  # every cell as expected
    history = json.loads((out / "history.json").read_text())
    assert len(history["runs"]) == 2
    page = (out / "report.html").read_text()
    assert f"{len(failing)} cells changed their outcome" in page
    section = page.split('<section id="history">')[1].split("</section>")[0]
    assert section.count("<tr>") == len(failing) + 1  # the header, then one row per flip
    assert "bbbbbbbbbbbb" not in section  # each flipped in the newer run, not the old one
    bad = subprocess.run([sys.executable, "-m", "cudamatrix", "report",
                          str(REPO / "reports" / "results.json"), "--out", str(out),
                          "--history", str(tmp_path)], capture_output=True, text=True,
                         check=False)
    assert bad.returncode == 2
    assert f"{tmp_path}: --history: no history.json or results.json in it" in bad.stderr


def _cell(outcome: str) -> CellResult:
    data: dict[str, Any] = {"case": "c", "variant": "v", "toolkit": "13.0", "arch": "sm_90",
                            "frontend": "nvrtc", "outcome": outcome, "stage": "run",
                            "stages": []}
    return CellResult.from_dict(data)


def test_the_badge_counts_what_was_decided() -> None:
    cells = [_cell("pass")] * 180 + [_cell("xfail")] * 2 + [_cell("fail")] * 7 \
        + [_cell("xpass")] + [_cell("skip")] * 3
    assert badge(cells) == {"schemaVersion": 1, "label": "CUDA matrix",
                            "message": "182/190 as expected, 3 skipped", "color": "red"}
    # Issue 61: the skipped cells are said, never hidden behind a full score.
    assert badge([_cell("pass")] * 84 + [_cell("skip")] * 60)["message"] == \
        "84/84 as expected, 60 skipped"
    assert badge([_cell("pass"), _cell("xfail")])["color"] == "brightgreen"
    assert badge([_cell("skip")])["message"] == "no cell decided"
