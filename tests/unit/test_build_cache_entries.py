"""What the build cache keeps of a build (orchestrator/build_cache.py), on real folders: a
build that said something of the project (built, refused, a tool it lacks) is kept and
served whole, its tree's links as links; one the run stopped (its limit, a signal, the
memory limit, a tool that broke) says nothing of the project and is built again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cudamatrix.orchestrator.build_cache import BuildCache
from cudamatrix.stages.cell.files import BUILD_SOURCE, COMPILE_RECORD
from cudamatrix.stages.cell.result import StageResult

KEY = "ab" + "0" * 62


def _built(folder: Path, outside: Path) -> Path:
    """A cell's folder as a build leaves it: the project's tree with its output and a link
    out of the tree (a CMake build's link to a system library, say)."""
    tree = folder / BUILD_SOURCE
    (tree / "out").mkdir(parents=True)
    (tree / "out" / "case.so").write_text("the library\n")
    outside.write_text("not the project's\n")
    (tree / "out" / "libsystem.so").symlink_to(outside)
    return folder


@pytest.mark.parametrize("status", ["ok", "failed", "unavailable"])
def test_a_build_that_said_something_of_the_project_is_served_again(
        tmp_path: Path, status: str) -> None:
    cache = BuildCache(tmp_path / "cache")
    stage = StageResult("compile", status, "", "built" if status == "ok" else "refused")  # type: ignore[arg-type]
    assert cache.store(KEY, _built(tmp_path / "cell", tmp_path / "system.so"), stage)
    served = tmp_path / "again"
    assert cache.restore(KEY, served)
    assert json.loads((served / COMPILE_RECORD).read_text())["status"] == status


@pytest.mark.parametrize("stage", [
    StageResult("compile", "timeout", "it ran past the cell's limit"),
    StageResult("compile", "error", "cmake crashed"),
    StageResult("compile", "crashed", "killed by SIGKILL"),
    StageResult("compile", "failed", "out of memory", accident="the memory limit")],
    ids=["timeout", "error", "crashed", "accident"])
def test_a_build_the_run_stopped_is_built_again(tmp_path: Path, stage: StageResult) -> None:
    cache = BuildCache(tmp_path / "cache")
    assert not cache.store(KEY, _built(tmp_path / "cell", tmp_path / "system.so"), stage)
    assert not cache.restore(KEY, tmp_path / "again")


def test_the_kept_tree_keeps_its_links_as_links(tmp_path: Path) -> None:
    """A link out of the built tree is kept as the link (never the file it points at
    copied into the cache, nor served as the project's own)."""
    cache = BuildCache(tmp_path / "cache")
    outside = tmp_path / "system.so"
    assert cache.store(KEY, _built(tmp_path / "cell", outside),
                       StageResult("compile", "ok", "", "built"))
    served = tmp_path / "again"
    assert cache.restore(KEY, served)
    link = served / BUILD_SOURCE / "out" / "libsystem.so"
    assert link.is_symlink() and os.readlink(link) == str(outside)
    assert (served / BUILD_SOURCE / "out" / "case.so").read_text() == "the library\n"
