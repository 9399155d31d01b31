"""Every path `validate` passes is the path the compiler uses (issue 57, point 11): nvcc's
comma lists split as nvcc splits them, -Xcompiler's values as the host compiler reads them,
placeholders checked as they will be filled in."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.config.corpus import load_case
from cudamatrix.errors import UserError
from cudamatrix.stages.compile.flags import path_values

CASE = """title = "t"
[[variant]]
name = "v"
source = "k.cu"
frontend = "nvcc"
flags = {flags}
"""


def _case(tmp_path: Path, flags: str) -> Path:
    folder = tmp_path / "cases" / "c"
    folder.mkdir(parents=True)
    (folder / "k.cu").write_text("__global__ void k() {}\n")
    (folder / "pre.h").write_text("#pragma once\n")
    (folder / "case.toml").write_text(CASE.format(flags=flags))
    return folder


def test_the_paths_the_compilers_read() -> None:
    assert path_values(["--pre-include=pre.h,/etc/passwd"]) == ["pre.h", "/etc/passwd"]
    assert path_values(["-Xcompiler=-include,/etc/passwd"]) == ["/etc/passwd"]
    assert path_values(["-Xcompiler", "-I/etc,-O2"]) == ["/etc"]
    assert path_values(["-Xcompiler", "-include", "-Xcompiler", "/etc/passwd"]) == [
        "/etc/passwd"]
    assert path_values(["-I", "inc", "-DX=a,b"]) == ["inc"]


@pytest.mark.parametrize("flags", [
    '["--pre-include=pre.h,/etc/passwd"]',
    '["-Xcompiler=-include,/etc/passwd"]',
    '["-Xcompiler", "-I/etc,-O2"]',
    '["-I{toolkit_root}/../.."]',
    '["-include", "{toolkit_include}/../../../etc/passwd"]',
])
def test_a_path_out_of_the_project_is_refused(tmp_path: Path, flags: str) -> None:
    with pytest.raises(UserError, match=r"outside|absolute"):
        load_case(_case(tmp_path, flags))


def test_what_stays_inside_loads(tmp_path: Path) -> None:
    case = load_case(_case(tmp_path, '["--pre-include=pre.h", "-I{toolkit_root}/include", '
                                     '"-Xcompiler", "-O2,-Wall"]'))
    assert case.variants[0].flags[0] == "--pre-include=pre.h"
