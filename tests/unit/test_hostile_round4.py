"""Issue 49, hostile round 4: what the last rounds added, fed what a careless or hostile
hand gives it. Each input gets a one-line refusal or its own cell's error, in bounded
memory and time; no printed command runs anything but itself."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from cudamatrix.config.plan import Cell
from cudamatrix.errors import UserError
from cudamatrix.record.results import RunInfo, load_results
from cudamatrix.reports.glance import repro


def test_an_older_records_repro_quotes_its_tier_and_cell(tmp_path: Path) -> None:
    """A results.json without repro_args (a shard, a baseline, a downloaded report) printed
    `cudamatrix run --tier pr; touch X # --cell ...` unquoted: pasted, it ran `touch`."""
    marker = tmp_path / "ran"
    info = RunInfo(started="", finished="", tier=f"pr; touch {marker} #", provider="wheels",
                   host="", tool_version="")
    cell = Cell(f"x$(touch {marker})", "v", "13.0", "sm_80", "nvrtc")
    command = repro(cell, info)
    assert shlex.split(command)[:4] == ["cudamatrix", "run", "--tier", info.tier]
    subprocess.run(["sh", "-c", command.replace("cudamatrix", "true", 1)], check=True)
    assert not marker.exists()


def _results(tmp_path: Path, run: dict[str, object]) -> Path:
    path = tmp_path / "results.json"
    base = {"started": "", "finished": "", "tier": "pr", "provider": "wheels", "host": "",
            "tool_version": "0"}
    path.write_text(json.dumps({"schema": "cudamatrix-results", "schema_version": 1,
                                "run": {**base, **run}, "cells": []}))
    return path


def test_a_repro_line_no_shell_can_split_is_refused_when_read(tmp_path: Path) -> None:
    """`run.repro_args` with an unbalanced quote was "No closing quotation" out of report
    and merge, a traceback."""
    with pytest.raises(UserError) as caught:
        load_results(_results(tmp_path, {"repro_args": "--corpus 'cases"}))
    said = str(caught.value)
    assert "repro_args" in said and "\n" not in said


def _cell_record(timing: dict[str, object]) -> dict[str, object]:
    return {"case": "saxpy", "variant": "v", "toolkit": "13.0", "arch": "sm_90",
            "frontend": "nvrtc", "outcome": "pass", "stage": "run", "stages": [
                {"stage": "compile", "status": "ok"},
                {"stage": "run", "status": "ok", "details": {"timing": timing}}]}


@pytest.mark.parametrize("timing", [
    {"median_us": 0, "min_us": 1, "noise": 0.01},
    {"median_us": -3.5, "min_us": 1, "noise": 0.01},
    {"median_us": 1e12, "min_us": 1, "noise": 0.01},
    {"median_us": 5, "min_us": 0, "noise": 0.01},
    {"median_us": 5, "min_us": 1, "noise": -1},
])
def test_a_time_no_history_could_hold_is_refused_where_it_is_read(
        tmp_path: Path, timing: dict[str, object]) -> None:
    """A timed cell with median_us <= 0 or >= 1e12 was read, merged into history.json, and
    then every later merge reading that history exited 2 (and a reference of 0 was a
    ZeroDivisionError in merge and report --rejudge)."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": "cudamatrix-results", "schema_version": 1,
                                "run": {"started": "", "finished": "", "tier": "pr",
                                        "provider": "wheels", "host": "", "tool_version": "0"},
                                "cells": [_cell_record(timing)]}))
    with pytest.raises(UserError) as caught:
        load_results(path)
    assert "timing." in str(caught.value) and "\n" not in str(caught.value)
