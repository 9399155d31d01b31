"""The build frontend's pure parts (issue 14, point 3): the decisive line of a failed
build read from real build logs, and a bad [variant.build] table refused in one line
naming the file and the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO
from cudamatrix.config.corpus import load_case
from cudamatrix.errors import UserError
from cudamatrix.stages.frontends.build_run import failure_line

LOGS = REPO / "tests" / "data" / "logs"


def test_a_build_failure_is_the_compilers_line_not_the_build_systems_frame() -> None:
    linked = (LOGS / "pip-wheel-cmake-cudadevrt-12.4.log").read_text()
    assert failure_line(linked) == "/usr/bin/ld: cannot find -lcudadevrt: No such file or directory"
    refused = (LOGS / "cmake-compute70-13.0.log").read_text()
    assert failure_line(refused) == "nvcc fatal   : Unsupported gpu architecture 'compute_70'"
    only_cmake = "CMake Error at CMakeLists.txt:4 (project):\n  Couldn't find CUDA library root.\n"
    assert failure_line(only_cmake) == ("CMake Error at CMakeLists.txt:4 (project): "
                                        "Couldn't find CUDA library root.")


@pytest.mark.parametrize(("variant", "said"), [
    ('frontend = "build"\n[variant.build]\ncommands = ["make {arches}"]',
     "unknown placeholder {arches}"),
    ('frontend = "build"\nkernel = "k"\n[variant.build]\ncommands = ["make"]',
     "a build case takes no kernel"),
    ('frontend = "build"\nsource = "k.cu"\n[variant.build]\ncommands = ["make"]',
     "a build's source is a folder"),
    ('frontend = "build"\n[variant.build]\ncommands = ["make"]\nproject = "svn:x"',
     "is not a source"),
    ('frontend = "build"\n[variant.build]\ncommands = ["make"]\noutputs = ["../*.so"]',
     "outputs are patterns inside the project's folder"),
    ('frontend = "nvcc"\nsource = "k.cu"\n[variant.build]\ncommands = ["make"]',
     "the nvcc frontend takes no build table"),
    ('frontend = "build"', "needs a [variant.build] table"),
])
def test_a_bad_build_table_is_one_line_naming_file_and_entry(tmp_path: Path, variant: str,
                                                              said: str) -> None:
    folder = tmp_path / "corpus" / "bad"
    folder.mkdir(parents=True)
    (folder / "k.cu").write_text("__global__ void k() {}\n")
    (folder / "case.toml").write_text(f'title = "t"\n[[variant]]\nname = "v"\n{variant}\n')
    with pytest.raises(UserError) as raised:
        load_case(folder, tmp_path / "corpus")
    message = str(raised.value)
    assert said in message and str(folder / "case.toml") in message and "\n" not in message
