"""Hostile and careless inputs to what the tool reads and prints (its records, repro
lines, names, sizes): each gets a one-line refusal or its own cell's error, in bounded
memory and time; no printed command runs anything but itself. (Issue 49's round.)"""

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


@pytest.mark.parametrize("include", ["/usr/include", "", "../outside", "~/inc"])
def test_a_header_librarys_include_outside_its_wheel_is_refused_by_validate(
        include: str) -> None:
    """`include = ["/usr/include"]` or `[""]` passed validate, then the run died with
    NotImplementedError or ValueError out of Path.glob."""
    from cudamatrix.config.defaults import DEFAULT_MATRIX
    from cudamatrix.config.matrix import load_matrix

    overrides = {"libraries": {"mine": {"headers": True, "package": "mine",
                                        "versions": ["1.0"], "include": [include]}}}
    with pytest.raises(UserError) as caught:
        load_matrix(DEFAULT_MATRIX, overrides)
    assert "libraries.mine.include" in str(caught.value)


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize(("members", "said"), [
    ({"inc/big.h": b"\0" * (80 << 20)}, "zip bomb"),
    ({"inc/" + "d/" * 1500 + "deep.h": b"x"}, "too deep"),
    ({"inc/a": b"x", "inc/a/b.h": b"y"}, "cannot be written"),
    ({"inc/a/b.h": b"y", "inc/a": b"x"}, "does not inflate"),  # found by nox -s fuzz
    ({"inc/./x.h": b"x"}, "cannot be written"),
    ({"inc/" + "n" * 300 + ".h": b"x"}, "too long"),
])
def test_a_hostile_header_wheel_fails_its_library_not_the_run(
        tmp_path: Path, members: dict[str, bytes], said: str) -> None:
    """A header library's wheel (read by ranges or fetched whole: the same extraction): an
    80 MiB header of zeros was extracted whole (the audit's bounds now apply: 64 MiB, then
    50 times the compressed size); 1,500 folders deep was a RecursionError; a file with a
    member below it, a `.` member or a 300-byte name stopped the whole run ("make room")."""
    import zipfile

    from cudamatrix.errors import EnvironmentUnavailable
    from cudamatrix.providers.wheel_index import _extract

    wheel = _wheel(tmp_path / "mine-1.0-py3-none-any.whl", members)
    with zipfile.ZipFile(wheel) as archive, pytest.raises(EnvironmentUnavailable) as caught:
        _extract(archive, lambda name: name.startswith("inc/"), tmp_path / "out", wheel.name)
    assert wheel.name in str(caught.value) and said.split()[0] in str(caught.value), \
        caught.value
    written = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file()) \
        if (tmp_path / "out").exists() else 0
    assert written < 70 << 20


def _outs(tmp_path: Path) -> dict[str, Path]:
    import os

    (tmp_path / "file").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo")
    return {"a file": tmp_path / "file", "/dev/null": Path("/dev/null"),
            "a dangling link": tmp_path / "dangling", "a FIFO": tmp_path / "fifo",
            "file/sub": tmp_path / "file" / "sub", "/proc/self": Path("/proc/self")}


@pytest.mark.parametrize("command", [["report", "results.json"], ["merge", "shard"],
                                     ["audit", "x.whl"]])
def test_every_commands_out_is_checked_once_before_any_work(
        tmp_path: Path, command: list[str]) -> None:
    """`report`/`merge --out` at a file, /dev/null, a dangling link, a FIFO, file/sub or
    /proc/self were FileExistsError or NotADirectoryError tracebacks after the work;
    `run` already answered them with one line."""
    import sys

    for what, out in _outs(tmp_path).items():
        done = subprocess.run([sys.executable, "-m", "cudamatrix", *command, "--out", str(out)],
                              capture_output=True, text=True, cwd=tmp_path, timeout=60,
                              check=False)
        said = (done.stdout + done.stderr).strip()
        assert done.returncode == 2, (what, said)
        assert said.count("\n") == 0 and "Traceback" not in said, (what, said)
        assert str(out) in said and "not writable" in said, (what, said)


@pytest.mark.parametrize("line", [
    "touch /tmp/cudamatrix-pwned",
    "/usr/bin/nvcc -c k.cu; touch /tmp/cudamatrix-pwned",
    "/usr/bin/nvcc -c $(touch /tmp/cudamatrix-pwned)",
    "/usr/bin/python3 -c 'import os'",
])
def test_a_repro_script_holds_only_compiler_lines(tmp_path: Path, line: str) -> None:
    """`cudamatrix repro ID | sh` printed whatever a record's compile log held after `$ `:
    a downloaded results.json could make it any command. Only a compiler's own plain line
    is printed."""
    from cudamatrix.commands.repro import compile_script

    record = _cell_record({"median_us": 5, "min_us": 1, "noise": 0.01})
    record["stages"][0]["log"] = f"$ {line}\n"
    from cudamatrix.record.results import CellResult

    with pytest.raises(UserError) as caught:
        compile_script(CellResult.from_dict(record), tmp_path)
    assert "not one compiler's plain command line" in str(caught.value)
    good = dict(record, stages=[{**record["stages"][0],
                                 "log": "$ /opt/cuda/bin/nvcc -c -o kernel.o k.cu\n"}])
    assert "/opt/cuda/bin/nvcc -c -o kernel.o k.cu" in compile_script(
        CellResult.from_dict(good), tmp_path)


def test_a_recorded_integer_past_any_float_is_refused_in_one_line(tmp_path: Path) -> None:
    """Found by the fuzz target of history.json in CI: `median_us: 10**400` (JSON's integers
    have no bound) was an OverflowError out of the number reader, a traceback."""
    from cudamatrix.common import recorded

    with pytest.raises(ValueError) as caught:
        recorded.number({"median_us": 10**400}, "median_us", None, where="timing.")
    assert "timing.median_us" in str(caught.value)
