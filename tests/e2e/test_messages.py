"""What once ended in a traceback (issue 11, point 8) now ends in one line naming the file,
value or cell, exit status 2, and no finished cell lost."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, Run, cudamatrix, write_case
from cudamatrix.config.defaults import DEFAULT_MATRIX

KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n'
CASE = """
    title = "[/bold] a title with markup"
    [[variant]]
    name = "v"
    source = "k.cu"
    frontend = "nvrtc"
    {extra}
"""
CELL = ("--toolkit", "12.4", "--arch", "sm_80")


def _one_line_error(run: Run, *words: str) -> str:
    assert run.code == 2, run.output[-3000:]
    assert "Traceback" not in run.output, run.output[-3000:]
    error = [line for line in run.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1, run.output[-3000:]
    for word in words:
        assert word in error[0], error[0]
    return error[0]


@pytest.mark.parametrize("value", ["nan", "inf", "true", "-3"])
def test_a_bad_case_timeout_is_named(tmp_path: Path, value: str) -> None:
    write_case(tmp_path / "c", "t", CASE.format(extra=f"timeout = {value}"), {"k.cu": KERNEL})
    run = cudamatrix("validate", "--corpus", str(tmp_path / "c"))
    _one_line_error(run, str(tmp_path / "c" / "t" / "case.toml"), "timeout must be a positive")


@pytest.mark.parametrize("option, value", [("--cell-timeout", "nan"), ("--cell-timeout", "-1"),
                                           ("--run-timeout", "inf"), ("--cell-memory", "0")])
def test_a_bad_limit_on_the_command_line_is_named(tmp_path: Path, option: str,
                                                  value: str) -> None:
    run = cudamatrix("run", option, value, out=tmp_path / "out")
    assert run.code == 2 and "Traceback" not in run.output
    assert option in run.output and value in run.output


def _corpus(tmp_path: Path) -> Path:
    write_case(tmp_path / "c", "one", CASE.format(extra=""), {"k.cu": KERNEL})
    write_case(tmp_path / "c", "two", CASE.format(extra=""), {"k.cu": KERNEL.replace("2.0f",
                                                                                     "3.0f")})
    return tmp_path / "c"


def _run(corpus: Path, out: Path, *args: str, **kwargs: object) -> Run:
    return cudamatrix("run", "--corpus", str(corpus), "--case", "one", "--case", "two", *CELL,
                      *args, out=out, **kwargs)  # type: ignore[arg-type]


def test_a_malformed_baseline_is_refused_before_the_run(tmp_path: Path) -> None:
    baseline = tmp_path / "old.json"
    baseline.write_text("{not json")
    run = _run(_corpus(tmp_path), tmp_path / "out", "--baseline", str(baseline))
    _one_line_error(run, str(baseline), "not JSON")
    assert not (tmp_path / "out" / "cells").exists()  # nothing ran


def test_a_damaged_cell_record_on_resume_is_named(tmp_path: Path) -> None:
    corpus, out = _corpus(tmp_path), tmp_path / "out"
    assert _run(corpus, out).code == 0
    damaged = sorted((out / "cells").glob("*.json"))[0]
    damaged.write_text('{"id": ')
    _one_line_error(_run(corpus, out, "--resume"), str(damaged), "damaged cell record")


@pytest.mark.parametrize("content", ['{"schema": "cudamatrix-results", "run": {}}', "[1, 2",
                                     '{"schema": "cudamatrix-results", "run": 3, "cells": 4}'])
def test_report_and_merge_name_a_damaged_results_file(tmp_path: Path, content: str) -> None:
    results = tmp_path / "results.json"
    results.write_text(content)
    _one_line_error(cudamatrix("report", str(results), "--out", str(tmp_path / "r")),
                    str(results))
    _one_line_error(cudamatrix("merge", str(results), "--out", str(tmp_path / "m")),
                    str(results))


def test_a_case_folder_name_that_is_not_an_id_is_named(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_case(corpus, "fine", CASE.format(extra=""), {"k.cu": KERNEL})
    bad = os.fsencode(corpus) + b"/caf\xe9"
    os.makedirs(bad)
    with open(bad + b"/case.toml", "wb") as handle:
        handle.write((corpus / "fine" / "case.toml").read_bytes())
    _one_line_error(cudamatrix("validate", "--corpus", str(corpus)), "caf\\udce9",
                    "a case folder's name is its id")


def test_an_unwritable_cache_is_named(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.write_text("a file where the cache folder should be")
    run = _run(_corpus(tmp_path), tmp_path / "out", "--cache", str(cache))
    _one_line_error(run, str(cache), "cache folder is not writable")


def test_a_toolkit_folder_the_cache_cannot_hold_is_named(tmp_path: Path) -> None:
    """A file where the cache keeps its toolkits: the toolkit cannot be prepared (an
    OSError, not an EnvironmentUnavailable), which ended the run in a traceback."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "toolkits").write_text("a file where a folder should be")
    run = _run(_corpus(tmp_path), tmp_path / "out", "--cache", str(cache))
    line = _one_line_error(run, "toolkit 12.4 could not be prepared", "toolkits")
    assert "File exists" in line or "Not a directory" in line, line
    cell = run.cells()["one/v/12.4/sm_80"]
    assert cell["outcome"] == "error" and "toolkits" in cell["message"]


def test_markup_in_messages_is_printed_as_written(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_case(corpus, "one", CASE.format(extra=""),
               {"k.cu": "#error [/bold] closes nothing [red]\n" + KERNEL})
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
    _one_line_error(run, "the run stopped at cell", "File too large", "--resume")
    resumed = _run(corpus, out, "--resume")
    assert resumed.code == 0, resumed.output[-2000:]
    assert len(json.loads((out / "results.json").read_text())["cells"]) == 2


# -- 9. unknown keys, in every table, are refused with the nearest name ------------------

RUN = """
    title = "t"
    {top}
    [[variant]]
    name = "v"
    source = "k.cu"
    frontend = "nvrtc"
    kernel = "k"
    {variant}
    [variant.run]
    grid = [1]
    {run}
    [[variant.run.args]]
    name = "x"
    {arg}
    [variant.options]
    {options}
"""
_BLANK = dict(top="", variant="", run="", arg="", options="")


@pytest.mark.parametrize("where, line, says", [
    ("top", 'upstrem = ["https://example.com"]', "case: unknown key 'upstrem' (did you mean "
                                                  "'upstream'?)"),
    ("run", 'chek = { x = "x_in * 2" }', "variant 'v'.run: unknown key 'chek' (did you mean "
                                         "'check'?)"),
    ("run", "gird = [4]", "unknown key 'gird' (did you mean 'grid'?)"),
    ("arg", "shap = [32]", "run.args[0]: unknown key 'shap' (did you mean 'shape'?)"),
    ("options", "jitify = true", "variant 'v'.options: the nvrtc frontend takes no options, "
                                 "got 'jitify'"),
    ("variant", 'only = { toolkit = "" }', "only.toolkit: an empty value selects nothing"),
    ("variant", 'only = { toolkits = ">=12" }', "unknown key 'toolkits' (did you mean "
                                                "'toolkit'?)"),
    ("variant", 'only = { toolkit = ">=99" }', "selects no cell of"),
])
def test_a_misspelt_case_key_is_named_with_the_nearest(tmp_path: Path, where: str, line: str,
                                                       says: str) -> None:
    toml = RUN.format(**{**_BLANK, where: line})
    write_case(tmp_path / "c", "typo", toml, {"k.cu": KERNEL})
    run = cudamatrix("validate", "--corpus", str(tmp_path / "c"))
    _one_line_error(run, str(tmp_path / "c" / "typo" / "case.toml"), says)


@pytest.mark.parametrize("old, new, says", [
    ('default_tier = "pr"', 'default_teir = "pr"', "matrix: unknown key 'default_teir' (did you "
                                                   "mean 'default_tier'?)"),
    ('ptx_isa = "7.8"', 'ptx_isa = "7.8"\nmin_drvier = "1"', "unknown key 'min_drvier'"),
    ("[libraries.cupy]", "[libraries.cupy]\nversion = []", "libraries.cupy: unknown key "
                                                           "'version' (did you mean 'versions'?)"),
])
def test_a_misspelt_matrix_key_is_named_with_the_nearest(tmp_path: Path, old: str, new: str,
                                                         says: str) -> None:
    text = DEFAULT_MATRIX.read_text()
    assert old in text
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(text.replace(old, new, 1))
    _one_line_error(cudamatrix("validate", "--matrix", str(matrix)), str(matrix), says)


def test_a_frontends_own_options_are_its_schema(tmp_path: Path) -> None:
    """[variant.options] is checked against the frontend's own keys (stages/frontends/registry.py):
    CuPy's misspelt one is named with the nearest."""
    write_case(tmp_path / "c", "typo", """
        title = "CuPy with a misspelt option"
        [[variant]]
        name = "v"
        source = "k.cu"
        frontend = "cupy"
        kernel = "k"
        options = { jitfy = true }
    """, {"k.cu": KERNEL})
    run = cudamatrix("validate", "--corpus", str(tmp_path / "c"))
    _one_line_error(run, "variant 'v'.options: unknown key 'jitfy' (did you mean 'jitify'?)")
