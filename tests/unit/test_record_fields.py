"""A results.json from elsewhere (a shard, a download, a baseline) is data read by type where
it is read (issue 68): a timing figure or a bisect answer of another type is one line
naming the file and the field, exit status 2; a merge goes on with its other shards, and a
merge that holds no cell at all is no report. Each command runs in this process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import cudamatrix_in_process as cli
from conftest import one_line_error

RUN = {"started": "2026-11-01T00:00:00+00:00", "finished": "2026-11-01T00:01:00+00:00",
       "tier": "pr", "provider": "wheels", "host": "h", "tool_version": "0"}
TIMING = {"median_us": 12.5, "min_us": 12.0, "noise": 0.01, "samples": 50, "converged": True,
          "l2": "cold", "samples_us": [12.5, 12.4], "bytes": 1 << 20,
          "bandwidth_gbs": 83.9, "peak_gbs": 3350.0, "bandwidth_fraction": 0.025}


def _cell(case: str, timing: dict[str, Any]) -> dict[str, Any]:
    return {"case": case, "variant": "v", "toolkit": "13.0", "arch": "sm_90",
            "frontend": "nvrtc", "outcome": "pass", "stage": "run", "stages": [
                {"stage": "compile", "status": "ok"},
                {"stage": "run", "status": "ok", "details": {"timing": timing}}]}


def _results(path: Path, cells: list[dict[str, Any]], **run: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema": "cudamatrix-results", "schema_version": 1,
                                "run": {**RUN, **run}, "cells": cells}))
    return path


BAD_TIMINGS = [("bandwidth_gbs", "83.9"), ("bandwidth_fraction", "0.5"),
               ("bandwidth_gbs", -1), ("peak_gbs", True), ("bytes", "1MiB"),
               ("samples_us", ["12.5"]), ("bandwidth_fraction", [0.5])]


@pytest.mark.parametrize(("field", "value"), BAD_TIMINGS)
def test_a_timing_field_of_another_type_is_named_by_report(
        tmp_path: Path, field: str, value: object) -> None:
    """`bandwidth_gbs` as a string was a ValueError traceback out of the Markdown's
    format (`:,.0f`), after the record had been read as good."""
    path = _results(tmp_path / "results.json", [_cell("saxpy", {**TIMING, field: value})])
    one_line_error(cli("report", str(path), "--out", str(tmp_path / "r")), str(path),
                   f"timing.{field}")


def test_the_timing_fields_the_tool_writes_are_read(tmp_path: Path) -> None:
    path = _results(tmp_path / "results.json", [_cell("saxpy", TIMING)])
    done = cli("report", str(path), "--out", str(tmp_path / "r"))
    assert done.code == 0, done.output[-2000:]
    assert "84 GB/s" in (tmp_path / "r" / "COMPATIBILITY.md").read_text()


@pytest.mark.parametrize(("field", "value"), BAD_TIMINGS[:2])
def test_a_merge_keeps_its_other_shards_past_a_bad_timing_field(
        tmp_path: Path, field: str, value: object) -> None:
    """One shard's string bandwidth lost the merge's COMPATIBILITY.md, junit.xml and page
    for the whole run: now that shard's results.json is refused by name and the other
    shard's cells are merged and reported."""
    _results(tmp_path / "a" / "results.json", [_cell("good", TIMING)])
    _results(tmp_path / "b" / "results.json", [_cell("bad", {**TIMING, field: value})])
    done = cli("merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "m"))
    assert "Traceback" not in done.output, done.output[-3000:]
    warned = [line for line in done.output.splitlines() if line.startswith("warning:")]
    assert any(str(tmp_path / "b" / "results.json") in w and f"timing.{field}" in w
               for w in warned), done.output[-3000:]
    merged = json.loads((tmp_path / "m" / "results.json").read_text())
    assert [c["case"] for c in merged["cells"]] == ["good"]
    for name in ("COMPATIBILITY.md", "junit.xml", "report.html"):
        assert (tmp_path / "m" / name).is_file(), name


def test_a_merge_of_only_broken_shards_is_no_report(tmp_path: Path) -> None:
    """Shards that all died before writing anything merged into a report of 0 cells with
    exit status 0: a green merge of nothing."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text("{not json")
    line = one_line_error(cli("merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out",
                              str(tmp_path / "m")), "no cell")
    assert str(tmp_path / "a") in line
    assert not (tmp_path / "m" / "COMPATIBILITY.md").exists()


def test_a_merge_of_empty_shards_is_no_report(tmp_path: Path) -> None:
    _results(tmp_path / "a" / "results.json", [])
    one_line_error(cli("merge", str(tmp_path / "a"), "--out", str(tmp_path / "m")), "no cell")


SIDE = {"value": "12.4", "cell": "c/v/12.4/sm_90", "happened": "passes", "outcome": "pass",
        "message": "", "repro": "cudamatrix run --cell c/v/12.4/sm_90"}
BISECT = {"over": "toolkit", "values": ["12.4", "12.8", "13.0"], "probed": ["12.4", "13.0"],
          "skipped": {}, "changes": [
              {"at": "13.0", "before": SIDE,
               "after": {**SIDE, "value": "13.0", "cell": "c/v/13.0/sm_90",
                         "happened": "fails at run", "outcome": "fail", "message": "wrong",
                         "time": {"median_us": 12.5, "noise": 0.01, "ratio": 1.2,
                                  "bandwidth_gbs": 80.0}},
               "skipped_between": ["12.8"]}],
          "slower": {"ratio": 1.05, "value": "12.4", "median_us": 10.4}}


def _without(answer: dict[str, Any], path: str) -> dict[str, Any]:
    """`answer` (deep-copied) with the field at the dotted `path` removed."""
    copy: dict[str, Any] = json.loads(json.dumps(answer))
    *parents, last = path.split(".")
    node: Any = copy
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    del node[last]
    return copy


def _with(answer: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    copy = _without(answer, path)  # checks the path is there
    *parents, last = path.split(".")
    node: Any = copy
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[last] = value
    return copy


@pytest.mark.parametrize(("bisect", "field"), [
    (_without(BISECT, "changes"), "bisect.changes"),
    (_without(BISECT, "over"), "bisect.over"),
    (_with(BISECT, "values", []), "bisect.values"),
    (_with(BISECT, "changes", {"at": "13.0"}), "bisect.changes"),
    (_without(BISECT, "changes.0.before"), "bisect.changes[0].before"),
    (_without(BISECT, "changes.0.after.happened"), "bisect.changes[0].after.happened"),
    (_with(BISECT, "changes.0.after.message", 3), "bisect.changes[0].after.message"),
    (_with(BISECT, "changes.0.after.outcome", "broken"), "bisect.changes[0].after.outcome"),
    (_with(BISECT, "changes.0.after.time.ratio", "1.2"), "bisect.changes[0].after.time.ratio"),
    (_with(BISECT, "changes.0.skipped_between", "12.8"), "bisect.changes[0].skipped_between"),
    (_with(BISECT, "slower.median_us", "10"), "bisect.slower.median_us"),
    (_with(BISECT, "skipped", {"12.8": 1}), "bisect.skipped"),
    (_with(BISECT, "probed", None), "bisect.probed"),
    ("toolkit", "bisect"),
])
def test_a_bisect_answer_of_another_shape_is_named_by_report(
        tmp_path: Path, bisect: object, field: str) -> None:
    """`run.bisect` without `changes` was a KeyError traceback out of report (nox -s fuzz
    found it); each field of the answer is read by type where the record is read."""
    path = _results(tmp_path / "results.json", [_cell("saxpy", TIMING)], bisect=bisect)
    line = one_line_error(cli("report", str(path), "--out", str(tmp_path / "r")), str(path),
                          field)
    assert f"{field}." not in line.replace(f"{field}: ", ""), line  # the field itself


def test_a_bisect_answer_as_bisect_writes_it_is_reported(tmp_path: Path) -> None:
    path = _results(tmp_path / "results.json", [_cell("saxpy", TIMING)], bisect=BISECT)
    done = cli("report", str(path), "--out", str(tmp_path / "r"))
    assert done.code == 0, done.output[-2000:]
    text = (tmp_path / "r" / "COMPATIBILITY.md").read_text()
    assert "## Bisect" in text and "toolkit 13.0: passes -> fails at run, 1.200x" in text
    written = json.loads((tmp_path / "r" / "results.json").read_text())
    assert written["run"]["bisect"] == BISECT
