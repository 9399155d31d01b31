"""Issue 48: flags for some cells ([[variant.flags_if]]) and build options as an axis
([variant.defines]), as a project's CMake says them: ggml adds `-compress-mode=size`
from CUDA 12.8 on, and builds with GGML_CUDA_FORCE_MMQ on and off."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.config.corpus import load_case
from cudamatrix.errors import UserError

CASE = """\
title = "ggml's norm"

[[variant]]
name = "cmake-flags"
source = "k.cu"
frontend = "nvcc"
flags = ["-O3", "-use_fast_math"]
  [[variant.flags_if]]
  when = { toolkit = ">=12.8" }
  flags = ["-compress-mode=size"]
  [[variant.flags_if]]
  when = { arch = "sm_120a" }
  flags = ["-DARCH_SPECIFIC"]
  [variant.defines]
  GGML_CUDA_FORCE_MMQ = ["0", "1"]
  GGML_CUDA_F16 = ["1"]
"""


def _case(tmp_path: Path, text: str = CASE) -> Path:
    folder = tmp_path / "norm"
    folder.mkdir()
    (folder / "case.toml").write_text(text)
    (folder / "k.cu").write_text("__global__ void k() {}\n")
    return folder


def _axes(toolkit: str, arch: str) -> dict[str, str | None]:
    return {"case": "norm", "variant": "v", "frontend": "nvcc", "toolkit": toolkit,
            "arch": arch}


def test_flags_if_adds_flags_where_when_matches_and_defines_make_cells(tmp_path: Path) -> None:
    case = load_case(_case(tmp_path))
    names = [v.name for v in case.variants]
    assert names == ["cmake-flags.GGML_CUDA_FORCE_MMQ-0", "cmake-flags.GGML_CUDA_FORCE_MMQ-1"]
    forced = case.variants[1]
    assert forced.flags_for(_axes("12.4", "sm_80")) == (
        "-O3", "-use_fast_math", "-DGGML_CUDA_FORCE_MMQ=1", "-DGGML_CUDA_F16=1")
    assert forced.flags_for(_axes("13.0", "sm_80")) == (
        "-O3", "-use_fast_math", "-compress-mode=size", "-DGGML_CUDA_FORCE_MMQ=1",
        "-DGGML_CUDA_F16=1")
    assert forced.flags_for(_axes("12.8", "sm_120a"))[2:4] == ("-compress-mode=size",
                                                               "-DARCH_SPECIFIC")


@pytest.mark.parametrize(("table", "said"), [
    ('[[variant.flags_if]]\nwhen = { toolkit = ">=12.8" }', "needs when"),
    ('[[variant.flags_if]]\nwhen = { colour = "red" }\nflags = ["-x"]', "colour"),
    ('[[variant.flags_if]]\nwhen = { toolkit = ">=12.8" }\nflags = ["-I../../.."]',
     "leads outside"),
    ('[variant.defines]\n"1X" = ["0"]', "no C macro name"),
    ('[variant.defines]\nA = ["0", "0"]', "distinct values"),
    ('[variant.defines]\nA = ["$(id)"]', "distinct values"),
])
def test_a_wrong_flags_if_or_define_is_refused_naming_the_key(tmp_path: Path, table: str,
                                                               said: str) -> None:
    text = ('title = "t"\n[[variant]]\nname = "v"\nsource = "k.cu"\nfrontend = "nvcc"\n'
            + table + "\n")
    with pytest.raises(UserError) as caught:
        load_case(_case(tmp_path, text))
    assert said in str(caught.value) and "variant 'v'" in str(caught.value), caught.value


def test_a_build_case_takes_no_flags_if_or_defines(tmp_path: Path) -> None:
    """A build runs its own commands: flags it never passes would be a silent no-op."""
    text = ('title = "t"\n[[variant]]\nname = "v"\nfrontend = "build"\n'
            '[variant.build]\ncommands = ["make"]\n[variant.defines]\nA = ["0", "1"]\n')
    with pytest.raises(UserError) as caught:
        load_case(_case(tmp_path, text))
    assert "takes no defines" in str(caught.value), caught.value
