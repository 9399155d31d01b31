"""A build cell's library, where it is a Python package installed for the cell (a torch
wheel from PyPI, with its CUDA libraries, that a project's setup.py imports through
BuildExtension), is on the build's PYTHONPATH (issue 69, point 2): before, only the build's
own tools were, and an empty PYTHONPATH left a trailing separator (the current folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudamatrix.stages.cell.environment import LibraryEnvironment
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.specs import BuildSetting
from cudamatrix.stages.frontends.build_run import build_environment


def _job(tmp_path: Path, library: LibraryEnvironment | None) -> Job:
    return Job(cell_id="c/v/12.4/sm_90/torch_wheel-2.9.1", arch="sm_90",
               source=str(tmp_path), frontend="build", workdir=str(tmp_path / "work"),
               timeout=60, library=library,
               build_setting=BuildSetting(str(tmp_path), "p", (str(tmp_path / "tools"),), (),
                                          ""))


def test_the_cells_library_is_importable_by_the_build(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    site = tmp_path / "torch-2.9.1"
    (site / "fake_torch_for_build").mkdir(parents=True)
    (site / "fake_torch_for_build" / "__init__.py").write_text("VERSION = '2.9.1'\n")
    library = LibraryEnvironment("torch_wheel", "2.9.1", str(site), python_path=(str(site),))
    env = build_environment(_job(tmp_path, library))
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "tools"), str(site)]
    said = subprocess.run([sys.executable, "-c", "import fake_torch_for_build as t; "
                           "print(t.VERSION)"], env=env, capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    assert said.stdout.strip() == "2.9.1"
    # No library: the tools alone, and no empty entry (the current folder).
    alone = build_environment(_job(tmp_path, None))
    assert alone["PYTHONPATH"] == str(tmp_path / "tools")
