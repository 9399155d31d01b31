"""The python axis of a torch-extension cell (issue 69, item 2), with real parts: the scale
case's pybind11 binding (tests/data/torch-extension/scale/binding.cpp, `torch/extension.h`
and PYBIND11_MODULE) compiled by the host g++ with torch 2.5.1's headers and flags (its
wheel, read by ranges from PyPI) against three Pythons' headers: the interpreter's own,
and Debian's libpython3.13-dev (trixie) and libpython3.14-dev (forky), each fetched with
its signature and SHA-256 checked and unpacked once.

What really happens, checked by hand with the same g++ command (2026-11-27, this 2-core
machine, CUDA 13.0's include folders): torch 2.5.1 ships pybind11 2.13.5, and the binding
compiles against all three; the whole scale case (its kernel too, by nvcc 13.0 for sm_90)
passed the same way in 137 s (installed) and 203 s for 3.13 and 3.14 together, nvcc warning
on Python 3.13's object.h (`#1160-D: a reduction in alignment without the "packed"
attribute is ignored`). Only the binding is built here, the file through which Python's
headers reach a compile: 41 s a Python on one core, where the kernel's nvcc would add a
minute and a half each.
"""

from __future__ import annotations

import re
import shutil
import sysconfig
from pathlib import Path

from conftest import REPO, cudamatrix

CASE = """\
title = "the scale extension's pybind11 binding, against three Pythons' headers"

[[variant]]
name = "binding"
frontend = "torch-extension"
source = "binding.cpp"
options = { extension = "scale_ext" }
"""
PROJECT = """\
cases = ["cases"]

[tiers.pr]
python = ["installed", "3.13", "3.14"]
"""
CELL = "scale-binding/binding/13.0/sm_90/torch-2.5.1"
DEBIAN = r"libpython{v}-dev {v}\.\S+ \((bookworm|trixie|forky|sid)\)"


def test_the_binding_compiles_against_each_pythons_headers(tmp_path: Path) -> None:
    case = tmp_path / "cases" / "scale-binding"
    case.mkdir(parents=True)
    shutil.copy(REPO / "tests/data/torch-extension/scale/binding.cpp", case)
    (case / "case.toml").write_text(CASE)
    (tmp_path / "cudamatrix.toml").write_text(PROJECT)
    run = cudamatrix("run", "--toolkit", "13.0", "--arch", "sm_90", "--library",
                     "torch==2.5.1", "--no-gpu", out=tmp_path / "out", cwd=tmp_path)
    assert run.code == 0, run.output[-3000:]
    cells = {cell["id"]: cell for cell in run.results["cells"]}
    assert sorted(cells) == [CELL, f"{CELL}/py3.13", f"{CELL}/py3.14"]
    for cell_id, python in ((CELL, None), (f"{CELL}/py3.13", "3.13"),
                            (f"{CELL}/py3.14", "3.14")):
        cell = cells[cell_id]
        assert cell.get("python") == python
        compiled = cell["stages"][0]
        assert (compiled["stage"], compiled["status"]) == ("compile", "ok"), compiled["message"]
        assert (cell["outcome"], cell["stage"]) == ("pass", "inspect"), cell["message"]
        (command,) = [ln for ln in compiled["log"].splitlines() if ln.startswith("$ ")]
        assert "-D_GLIBCXX_USE_CXX11_ABI=0" in command  # torch 2.5.1's own defines
        if python is None:
            assert f"-I{sysconfig.get_paths()['include']}" in command
            assert "python headers" not in cell["versions"]
            continue
        assert re.fullmatch(DEBIAN.format(v=re.escape(python)),
                            cell["versions"]["python headers"]), cell["versions"]
        include = f"libpython{python}-dev/usr/include"
        for folder in (f"python{python}", f"x86_64-linux-gnu/python{python}"):
            assert f"{include}/{folder} " in command, command
        assert compiled["details"]["python"] == python
