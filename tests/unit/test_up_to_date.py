"""The record a run keeps of what it read (cudamatrix.common.up_to_date): each kind of change to
a watched file or folder, and to what the run wrote, makes the record stop holding."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudamatrix.common.up_to_date import (
    CONTENT,
    EVERYTHING,
    NAMES,
    RECORD,
    InputLedger,
    outputs_digest,
    record_run,
    standing_record,
)

COMMAND = {"command line": "a", "environment": "b"}


def _recorded(tmp_path: Path) -> tuple[Path, Path]:
    """A case folder and an --out folder whose run's record holds."""
    case = tmp_path / "case"
    (case / "include").mkdir(parents=True)
    (case / "k.cu").write_text("__global__ void k() {}\n")
    (case / "include" / "k.h").write_text("#define N 4\n")
    out = tmp_path / "out"
    (out / "cells").mkdir(parents=True)
    (out / "cells" / "k.json").write_text("{}")
    ledger = InputLedger()
    ledger.watch(case)
    record_run(out, COMMAND, ledger.inputs(), 1, "pass=1\n", "then", 1)
    assert standing_record(out, COMMAND)[0] is not None
    return case, out


def _why(out: Path) -> str:
    record, why = standing_record(out, COMMAND)
    assert record is None
    return why


def test_an_edit_of_the_same_size_with_its_mtime_put_back_is_a_change(tmp_path: Path) -> None:
    case, out = _recorded(tmp_path)
    header = case / "include" / "k.h"
    before = header.stat()
    header.write_text("#define N 8\n")
    os.utime(header, ns=(before.st_atime_ns, before.st_mtime_ns))  # as tar or rsync would
    assert _why(out) == f"{header} changed"


@pytest.mark.parametrize("change", ["added", "removed", "renamed", "linked elsewhere"])
def test_a_folder_entry_added_removed_renamed_or_relinked(tmp_path: Path, change: str) -> None:
    case, out = _recorded(tmp_path)
    if change == "added":
        (case / "include" / "new.h").write_text("")
    elif change == "removed":
        (case / "include" / "k.h").unlink()
    elif change == "renamed":
        (case / "k.cu").rename(case / "kernel.cu")
    else:
        (case / "link.h").symlink_to("include/k.h")
        assert standing_record(out, COMMAND)[0] is None
        record_run(out, COMMAND, {str(case): EVERYTHING}, 0, "", "then", 1)
        (case / "link.h").unlink()
        (case / "link.h").symlink_to("k.cu")
    assert _why(out).endswith(" changed")


def test_bytecode_and_git_folders_are_not_inputs(tmp_path: Path) -> None:
    case, out = _recorded(tmp_path)
    (case / "__pycache__").mkdir()
    (case / "__pycache__" / "k.cpython-311.pyc").write_bytes(b"\0")
    (case / ".git").mkdir()
    assert standing_record(out, COMMAND)[0] is not None


def test_a_changed_command_part_is_named(tmp_path: Path) -> None:
    _, out = _recorded(tmp_path)
    record, why = standing_record(out, {**COMMAND, "environment": "c"})
    assert record is None and why == "its environment changed"


def test_an_output_touched_or_removed_and_the_record_damaged(tmp_path: Path) -> None:
    _, out = _recorded(tmp_path)
    digest = outputs_digest(out)
    (out / ".cudamatrix.lock").write_text("pid 1")  # the lock is not an output
    assert outputs_digest(out) == digest
    (out / "cells" / "k.json").unlink()
    assert _why(out) == f"a file in {out} changed"
    (out / RECORD).write_text("{not json")
    assert standing_record(out, COMMAND) == (None, "")


def test_a_folder_named_by_a_link_is_watched_through_it(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "toolkits"
    (shared / "wheels-13.0").mkdir(parents=True)
    own = tmp_path / "cache"
    own.mkdir()
    (own / "toolkits").symlink_to(shared)
    out = tmp_path / "out"
    out.mkdir()
    record_run(out, COMMAND, {str(own / "toolkits"): 2}, 0, "", "then", 0)
    (shared / "wheels-13.0" / "cudamatrix-environment.json").write_text("{}")
    assert _why(out) == f"{shared / 'wheels-13.0' / 'cudamatrix-environment.json'} changed"


def test_the_ledger_keeps_the_deepest_watch_and_programs_across_runs(tmp_path: Path) -> None:
    ledger = InputLedger()
    program = tmp_path / "bin" / "g++"
    program.parent.mkdir()
    (tmp_path / "g++-12").write_text("")
    program.symlink_to(tmp_path / "g++-12")
    ledger.watch_program(str(program))
    ledger.watch(tmp_path / "case", 0)
    ledger.watch(tmp_path / "case")
    ledger.watch(tmp_path / "case", 1)
    ledger.refuse("k/nvcc/13.0/sm_90 ran its nvcc stages")
    assert ledger.inputs()[str(tmp_path / "case")] == EVERYTHING
    ledger.start()
    assert ledger.refusals == []
    assert set(ledger.inputs()) == {str(program), str(tmp_path / "g++-12")}


def test_code_by_its_bytes_and_path_folders_by_their_names(tmp_path: Path) -> None:
    """A reinstall rewrites the tool's modules and pip's own scripts byte for byte (new
    files, new times): the record holds; a changed byte or a program added does not."""
    package = tmp_path / "site" / "tool"
    package.mkdir(parents=True)
    (package / "mod.py").write_text("X = 1\n")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "tool").write_text("#!/bin/sh\n")
    out = tmp_path / "out"
    out.mkdir()
    record_run(out, COMMAND, {str(package): CONTENT, str(tools): NAMES}, 0, "", "then", 0)
    for file, text in ((package / "mod.py", "X = 1\n"), (tools / "tool", "#!/bin/sh\n")):
        file.unlink()
        file.write_text(text)
    assert standing_record(out, COMMAND)[0] is not None
    (tools / "clang++-19").write_text("")
    assert _why(out) == f"{tools / 'clang++-19'} changed"
    (tools / "clang++-19").unlink()
    (package / "mod.py").write_text("X = 2\n")
    assert _why(out) == f"{package / 'mod.py'} changed"


def test_a_run_whose_environment_failed_is_never_up_to_date(tmp_path: Path) -> None:
    """Issue 68, item 5: a shard's run (--fail-on never) whose toolkit could not be
    prepared (a file where the cache keeps its toolkits) kept its record, so the next run
    said "up to date" and kept the error cells after the cause was fixed. It runs again,
    saying why, and the failed environment is still named."""
    from conftest import SCALE_KERNEL, scale_case, write_case
    from conftest import cudamatrix_in_process as run

    write_case(tmp_path / "c", "one", scale_case(), {"k.cu": SCALE_KERNEL % "2.0f"})
    cache, out = tmp_path / "cache", tmp_path / "out"
    cache.mkdir()
    (cache / "toolkits").write_text("a file where a folder should be")
    command = ("run", "--corpus", str(tmp_path / "c"), "--case", "one", "--toolkit", "12.4",
               "--arch", "sm_80", "--cache", str(cache), "--out", str(out),
               "--fail-on", "never")
    first = run(*command)
    assert first.code == 0 and "toolkit 12.4 could not be prepared" in first.output, \
        first.output[-2000:]
    again = run(*command)
    assert "up to date" not in again.output, again.output[-2000:]
    assert "could not be prepared" in again.output.split("\n", 1)[0], again.output[-2000:]
