"""A bad case, matrix, option or results file the user can cause, found by reading files
alone (validate, a refusal before any work, report and merge of a damaged record): one line
naming the file, key or value, exit status 2, never a traceback. Each is run in this process
(conftest's cudamatrix_in_process, as tox's `tox_project` fixture runs tox): nothing here
compiles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import SCALE_KERNEL, one_line_error, scale_case, write_case
from conftest import cudamatrix_in_process as read
from cudamatrix.config.defaults import DEFAULT_MATRIX


@pytest.mark.parametrize("value", ["nan", "inf", "true", "-3"])
def test_a_bad_case_timeout_is_named(tmp_path: Path, value: str) -> None:
    write_case(tmp_path / "c", "t", scale_case(extra=f"timeout = {value}"),
               {"k.cu": SCALE_KERNEL % "2.0f"})
    run = read("validate", "--corpus", str(tmp_path / "c"))
    one_line_error(run, str(tmp_path / "c" / "t" / "case.toml"), "timeout must be a positive")


@pytest.mark.parametrize("option, value", [("--cell-timeout", "nan"), ("--cell-timeout", "-1"),
                                           ("--run-timeout", "inf"), ("--cell-memory", "0")])
def test_a_bad_limit_on_the_command_line_is_named(tmp_path: Path, option: str,
                                                  value: str) -> None:
    run = read("run", option, value, "--out", str(tmp_path / "out"))
    assert run.code == 2 and "Traceback" not in run.output
    assert option in run.output and value in run.output


@pytest.mark.parametrize("content", ['{"schema": "cudamatrix-results", "run": {}}', "[1, 2",
                                     '{"schema": "cudamatrix-results", "run": 3, "cells": 4}'])
def test_report_and_merge_name_a_damaged_results_file(tmp_path: Path, content: str) -> None:
    results = tmp_path / "results.json"
    results.write_text(content)
    one_line_error(read("report", str(results), "--out", str(tmp_path / "r")),
                    str(results))
    one_line_error(read("merge", str(results), "--out", str(tmp_path / "m")),
                    str(results))


def test_a_case_folder_name_that_is_not_an_id_is_named(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_case(corpus, "fine", scale_case(), {"k.cu": SCALE_KERNEL % "2.0f"})
    bad = os.fsencode(corpus) + b"/caf\xe9"
    os.makedirs(bad)
    with open(bad + b"/case.toml", "wb") as handle:
        handle.write((corpus / "fine" / "case.toml").read_bytes())
    one_line_error(read("validate", "--corpus", str(corpus)), "caf\\udce9",
                    "a case folder's name is its id")


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
    write_case(tmp_path / "c", "typo", toml, {"k.cu": SCALE_KERNEL % "2.0f"})
    run = read("validate", "--corpus", str(tmp_path / "c"))
    one_line_error(run, str(tmp_path / "c" / "typo" / "case.toml"), says)


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
    one_line_error(read("validate", "--matrix", str(matrix)), str(matrix), says)


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
    """, {"k.cu": SCALE_KERNEL % "2.0f"})
    run = read("validate", "--corpus", str(tmp_path / "c"))
    one_line_error(run, "variant 'v'.options: unknown key 'jitfy' (did you mean 'jitify'?)")
