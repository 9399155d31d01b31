"""A run clears its --out's cells/ and artifacts/ and writes its reports there (issue 79,
break 6): `run --out .` in a project removed the project's own artifacts/ and cells/ and
overwrote its report.html. A non-empty --out that no earlier run wrote is refused in one
line naming it, and left as it was; one an earlier run wrote is reused, and of it only
what the tool wrote is replaced."""

from __future__ import annotations

from pathlib import Path

from conftest import (
    SCALE_KERNEL,
    Run,
    cudamatrix_in_process,
    one_line_error,
    scale_case,
    write_case,
)


def _run_into(tmp_path: Path, out: Path) -> Run:
    """A hermetic run (its toolkit fails at once: a file where the cache keeps toolkits)."""
    if not (tmp_path / "c").exists():
        write_case(tmp_path / "c", "one", scale_case(), {"k.cu": SCALE_KERNEL % "2.0f"})
        (tmp_path / "cache").mkdir()
        (tmp_path / "cache" / "toolkits").write_text("a file where a folder should be")
    return cudamatrix_in_process(
        "run", "--corpus", str(tmp_path / "c"), "--case", "one", "--toolkit", "12.4",
        "--arch", "sm_80", "--cache", str(tmp_path / "cache"), "--out", str(out),
        "--fail-on", "never", "--always-run")


def _project(folder: Path) -> dict[str, str]:
    """A project's own files under names a run writes."""
    files = {"artifacts/model.bin": "weights", "cells/notes.txt": "mine",
             "report.html": "<p>the project's own page</p>", "src/main.cu": "int main();"}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return files


def test_a_project_folder_as_out_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    project = tmp_path / "project"
    files = _project(project)
    line = one_line_error(_run_into(tmp_path, project), str(project), "'report.html'")
    assert "not empty" in line and "no earlier cudamatrix run's record" in line, line
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) \
        == sorted(files)
    for name, text in files.items():
        assert (project / name).read_text() == text


def test_an_earlier_runs_out_is_reused_and_only_its_own_files_replaced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = _run_into(tmp_path, out)
    assert first.code == 0, first.output[-2000:]
    (out / "NOTES.md").write_text("a user's own notes beside the reports")
    (out / "cells" / "stale.json").write_text("{}")  # the last run's: cleared
    again = _run_into(tmp_path, out)
    assert again.code == 0, again.output[-2000:]
    assert (out / "NOTES.md").read_text() == "a user's own notes beside the reports"
    assert not (out / "cells" / "stale.json").exists()
    assert (out / "results.json").is_file()


def test_an_empty_folder_and_a_reports_folder_are_taken(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    first = _run_into(tmp_path, empty)
    assert first.code == 0, first.output[-2000:]
    # A folder `cudamatrix report` wrote (no lock, its results.json the tool's).
    reported = tmp_path / "reported"
    reported.mkdir()
    (reported / "results.json").write_text((empty / "results.json").read_text())
    (reported / "report.html").write_text("<p>the report's</p>")
    again = _run_into(tmp_path, reported)
    assert again.code == 0, again.output[-2000:]
    # Not the tool's: a results.json of some other program.
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text('{"schema": "someone-else", "cells": []}')
    one_line_error(_run_into(tmp_path, other), str(other), "'results.json'")
