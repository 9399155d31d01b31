"""What once ended in a traceback (issue 11, point 8) now ends in one line naming the file,
value or cell, exit status 2, and no finished cell lost."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from conftest import REPO, SCALE_KERNEL, Run, cudamatrix, one_line_error, scale_case, write_case

CELL = ("--toolkit", "12.4", "--arch", "sm_80")


def _corpus(tmp_path: Path) -> Path:
    write_case(tmp_path / "c", "one", scale_case(), {"k.cu": SCALE_KERNEL % "2.0f"})
    write_case(tmp_path / "c", "two", scale_case(), {"k.cu": SCALE_KERNEL % "3.0f"})
    return tmp_path / "c"


def _run(corpus: Path, out: Path, *args: str, **kwargs: object) -> Run:
    return cudamatrix("run", "--corpus", str(corpus), "--case", "one", "--case", "two", *CELL,
                      *args, out=out, **kwargs)  # type: ignore[arg-type]


def test_a_malformed_baseline_is_refused_before_the_run(tmp_path: Path) -> None:
    baseline = tmp_path / "old.json"
    baseline.write_text("{not json")
    run = _run(_corpus(tmp_path), tmp_path / "out", "--baseline", str(baseline))
    one_line_error(run, str(baseline), "not JSON")
    assert not (tmp_path / "out" / "cells").exists()  # nothing ran


def test_a_damaged_cell_record_on_resume_is_named(tmp_path: Path) -> None:
    corpus, out = _corpus(tmp_path), tmp_path / "out"
    assert _run(corpus, out).code == 0
    damaged = sorted((out / "cells").glob("*.json"))[0]
    damaged.write_text('{"id": ')
    one_line_error(_run(corpus, out, "--resume"), str(damaged), "damaged cell record")


def test_an_unwritable_cache_is_named(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.write_text("a file where the cache folder should be")
    run = _run(_corpus(tmp_path), tmp_path / "out", "--cache", str(cache))
    one_line_error(run, str(cache), "cache folder is not writable")


def test_a_toolkit_folder_the_cache_cannot_hold_is_named(tmp_path: Path) -> None:
    """A file where the cache keeps its toolkits: the toolkit cannot be prepared (an
    OSError, not an EnvironmentUnavailable), which ended the run in a traceback."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "toolkits").write_text("a file where a folder should be")
    run = _run(_corpus(tmp_path), tmp_path / "out", "--cache", str(cache))
    line = one_line_error(run, "toolkit 12.4 could not be prepared", "toolkits")
    assert "File exists" in line or "Not a directory" in line, line
    cell = run.cells()["one/v/12.4/sm_80"]
    assert cell["outcome"] == "error" and "toolkits" in cell["message"]


def test_markup_in_messages_is_printed_as_written(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_case(corpus, "one", scale_case(title="[/bold] a title with markup"),
               {"k.cu": "#error [/bold] closes nothing [red]\n" + SCALE_KERNEL % "2.0f"})
    run = cudamatrix("run", "--corpus", str(corpus), "--case", "one", *CELL,
                     out=tmp_path / "out", env={"CI": ""})
    assert run.code == 1 and "Traceback" not in run.output, run.output[-3000:]


def test_a_full_disk_stops_the_run_and_keeps_what_was_saved(tmp_path: Path) -> None:
    """Writes past the file-size limit fail as on a full disk (Python ignores SIGXFSZ)."""
    corpus, out = _corpus(tmp_path), tmp_path / "out"
    assert _run(corpus, tmp_path / "warm").code == 0  # environments and cache ready

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, resource.RLIM_INFINITY))

    command = [sys.executable, "-m", "cudamatrix", "run", "--corpus", str(corpus),
               "--case", "one", "--case", "two", *CELL, "--out", str(out), "--jobs", "1"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CI": "1", "CUDAMATRIX_PROVIDER": "wheels"},
                          preexec_fn=small_files, check=False)
    run = Run(done.returncode, done.stdout + done.stderr, out)
    one_line_error(run, "the run stopped at cell", "File too large", "--resume")
    resumed = _run(corpus, out, "--resume")
    assert resumed.code == 0, resumed.output[-2000:]
    assert len(json.loads((out / "results.json").read_text())["cells"]) == 2
