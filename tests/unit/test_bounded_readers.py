"""Every reader of a file a user or another job hands over is bounded in size, depth and
value before use (issue 43): one line naming the file, never a traceback, never an
unbounded read; the up-to-date record that does not read is ignored, never trusted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cudamatrix.common.recorded import MAX_DEPTH, UnreadableRecord, read_json
from cudamatrix.common.up_to_date import (
    RECORD,
    InputLedger,
    path_lines,
    record_run,
    standing_record,
)
from cudamatrix.errors import UserError
from cudamatrix.record.history import PastRun, check_history, gather, history_document
from cudamatrix.record.results import load_cell, load_results

REPO = Path(__file__).resolve().parents[2]
EVIDENCE = REPO / "bench" / "evidence"  # the runs kept as evidence of past changes
DEEP = "[" * 100_000 + "]" * 100_000


def test_deep_nesting_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    with pytest.raises(UnreadableRecord, match="nested deeper than"):
        read_json(path)
    just_over = tmp_path / "over.json"
    just_over.write_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(UnreadableRecord, match="nested deeper than"):
        read_json(just_over)
    with pytest.raises(UserError, match=f"{path}: nested deeper than"):
        load_results(path)
    with pytest.raises(UserError, match="damaged cell record"):
        load_cell(path)


def test_special_files_and_size_are_refused_before_reading(tmp_path: Path) -> None:
    with pytest.raises(UnreadableRecord, match="not a regular file"):
        read_json(Path("/dev/zero"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableRecord, match="not a regular file"):  # never blocks
        read_json(fifo)
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * 600 + "0]")
    with pytest.raises(UnreadableRecord, match="over the"):
        read_json(big, max_bytes=1000)


def test_resource_figures_are_bounded(tmp_path: Path) -> None:
    seed = json.loads((EVIDENCE / "realworld-h100" / "results.json").read_text())
    seed["cells"] = seed["cells"][:1]
    for figure in (10 ** 400, -5):
        document = json.loads(json.dumps(seed))
        document["cells"][0]["stages"][0]["details"]["resources"][0]["registers"] = figure
        path = tmp_path / "results.json"
        path.write_text(json.dumps(document))
        with pytest.raises(UserError, match=r"resources\.registers: expected a whole number"):
            load_results(path)


def _run(day: str) -> PastRun:
    return PastRun(f"{day}T03:17:00+00:00", "0" * 40, "nightly",
                   {"c/v/13.0/sm_90": ("pass", "run")})


def test_history_from_the_future_is_refused_and_this_run_always_kept(tmp_path: Path) -> None:
    future = tmp_path / "history.json"
    future.write_text(json.dumps(history_document([_run("9999-01-01"), _run("2026-11-01")])))
    with pytest.raises(UserError, match=r"a run finished 9999-01-01.*after this one"):
        check_history([future], "2026-11-25T00:00:00+00:00")
    now = _run("2026-11-25")
    kept = gather([future], now, limit=2)
    assert kept[-1] is now and [r.finished[:10] for r in kept] == ["2026-11-01", "2026-11-25"]
    assert gather([future], now, limit=0) == [now]  # at least this one, whatever was asked
    with pytest.raises(UserError, match="--history: not a regular file"):
        check_history([Path("/dev/zero")], "2026-11-25")


def _recorded(tmp_path: Path) -> Path:
    case = tmp_path / "case"
    case.mkdir()
    (case / "k.cu").write_text("__global__ void k() {}\n")
    out = tmp_path / "out"
    out.mkdir()
    ledger = InputLedger()
    ledger.watch(case)
    record_run(out, {"c": "1"}, ledger.inputs(), 0, "pass=1\n", "then", 1)
    assert standing_record(out, {"c": "1"})[0] is not None
    return out


@pytest.mark.parametrize(("key", "value"), [
    ("inputs", {}), ("status", "boom"), ("status", 1000), ("said", ["x"]), ("cells", "many"),
    ("depths", {"/nowhere": 0}),
])
def test_a_damaged_record_is_ignored_never_trusted(tmp_path: Path, key: str,
                                                    value: object) -> None:
    out = _recorded(tmp_path)
    data = json.loads((out / RECORD).read_text())
    data[key] = value
    (out / RECORD).write_text(json.dumps(data))
    assert standing_record(out, {"c": "1"}) == (None, "")


def test_a_record_input_that_is_a_device_or_a_fifo_is_never_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        (line,) = path_lines(path, -3)  # by content: a stat line, never a read
        assert "special" in line


def test_what_a_record_says_is_printed_without_escape_sequences(
        capsys: pytest.CaptureFixture[str]) -> None:
    from cudamatrix.common.log_line import say_lines

    say_lines("pass=1\x1b[2J\x07\n::stop-commands::x\n")  # how `run` replays a record's
    assert capsys.readouterr().out == "pass=1\\x1b[2J\\x07\n\\x3a:stop-commands::x\n"


def test_toml_files_are_bounded_too(tmp_path: Path) -> None:
    """case.toml and cudamatrix.toml: nesting past the parser's recursion, a device or a
    FIFO, each one line naming the file."""
    from cudamatrix.common.tomlfile import load_toml

    deep = tmp_path / "case.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    fifo = tmp_path / "cudamatrix.toml"
    os.mkfifo(fifo)
    for path, said in ((deep, "nested too deep"), (Path("/dev/zero"), "not a regular file"),
                       (fifo, "not a regular file")):
        with pytest.raises(UserError, match=said) as caught:
            load_toml(path)
        assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_a_module_no_cuobjdump_reads_names_each_tool_and_what_it_said(tmp_path: Path) -> None:
    """Issue 61, point 2: where neither the newest cuobjdump nor an older one reads a
    module, the message says which tool could not read it and why, each in turn; the older
    ones are made only once the newest failed."""
    from cudamatrix.stages.binaries.elf import UnreadableFile
    from cudamatrix.stages.binaries.facts import Cuobjdumps, _extract_any

    def tool(name: str, said: str) -> str:
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 1\n")
        path.chmod(0o755)
        return str(path)

    asked: list[bool] = []
    newest = tool("new", "cuobjdump fatal   : Invalid ELF")
    tools = Cuobjdumps(newest, "cuobjdump 13.5",
                       lambda: asked.append(True) or [("cuobjdump 12.4 (Debian trixie)",
                                                       tool("old", "cuobjdump fatal : nope"))])
    source = tmp_path / "module.fatbin"
    source.write_bytes(b"\\0" * 16)
    with pytest.raises(UnreadableFile) as caught:
        _extract_any(tools, source, "lib.so", tmp_path)
    assert str(caught.value) == ("cuobjdump 13.5 could not read it whole (cuobjdump fatal   : "
                                 "Invalid ELF); 0 images were extracted; cuobjdump 12.4 (Debian "
                                 "trixie) could not read it whole (cuobjdump fatal : nope); 0 "
                                 "images were extracted")
    assert asked == [True]
