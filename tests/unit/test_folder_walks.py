"""Case folders are walked (validate, list, plan, run read every link of a case; a run
keys its compiles and a build source by every file under them): a folder nested deeper
than any project, or a link that names itself, is one line naming it, exit status 2, never
a RecursionError or RuntimeError traceback (issue 68, item 8)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SCALE_KERNEL, one_line_error, scale_case, write_case
from cudamatrix.common.folders import MAX_FOLDER_DEPTH, walk
from cudamatrix.config.sources import tree_digest
from cudamatrix.errors import UserError
from cudamatrix.orchestrator.compile_cache import folder_inputs


def _nest(folder: Path, depth: int) -> Path:
    """`depth` folders named `d`, one in the other, under `folder` (made by relative steps:
    the deepest path is longer than PATH_MAX lets one call name)."""
    here = os.getcwd()
    try:
        os.chdir(folder)
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(here)
    return folder


def _unnest(folder: Path) -> None:
    """The `d` folders under `folder` removed from the deepest up (shutil.rmtree, and so
    pytest's clean-up of tmp_path, recurses as deep as the tree)."""
    here = os.getcwd()
    try:
        os.chdir(folder)
        depth = 0
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for _ in range(depth):
            for name in os.listdir("."):
                os.unlink(name)
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(here)


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Path]:
    write_case(tmp_path / "corpus", "c1", scale_case(), {"k.cu": SCALE_KERNEL % "2.0f"})
    yield tmp_path / "corpus"
    _unnest(tmp_path / "corpus" / "c1")


@pytest.mark.parametrize("command", ["validate", "list", "plan"])
def test_a_case_folder_nested_1100_deep_is_one_line(read_cli, corpus: Path,
                                                    command: str) -> None:
    _nest(corpus / "c1", 1100)
    run = read_cli(command, "--corpus", str(corpus))
    one_line_error(run, "c1", "nested more than")


@pytest.mark.parametrize("command", ["validate", "list", "plan"])
def test_a_link_to_itself_in_a_case_folder_is_one_line(read_cli, corpus: Path,
                                                       command: str) -> None:
    (corpus / "c1" / "self").symlink_to("self")
    run = read_cli(command, "--corpus", str(corpus))
    one_line_error(run, "self", "loop")


def test_the_run_side_walks_refuse_a_deep_folder(tmp_path: Path) -> None:
    """A run's compile key and a build source's digest walk the same folders."""
    _nest(tmp_path, MAX_FOLDER_DEPTH + 5)
    (tmp_path / "a.cu").write_text("x")
    for read in (lambda: folder_inputs([tmp_path]), lambda: tree_digest(tmp_path)):
        with pytest.raises(UserError, match="nested more than"):
            read()
    _unnest(tmp_path)


def test_walk_is_os_walk_within_the_bound(tmp_path: Path) -> None:
    _nest(tmp_path, 20)
    (tmp_path / "d" / "f").write_text("x")
    (tmp_path / "up").symlink_to(".")
    mine = [(root, sorted(dirs), sorted(names)) for root, dirs, names in walk(tmp_path)]
    assert len(mine) == 21
    assert mine[0] == (str(tmp_path), ["d"], ["up"])  # a link to a folder is never entered
    assert (str(tmp_path / "d"), [], ["f"]) not in mine and mine[1][2] == ["f"]
    _unnest(tmp_path)
