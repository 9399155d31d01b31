"""[variant.defines] combinations are bounded (issue 57, point 6): 10^9 combinations were a
MemoryError, 10^5 a minute of validate's duplicate check; more than the bound is one line
naming the table and the count, before anything is expanded."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.config.corpus import MAX_DEFINE_COMBINATIONS, load_case
from cudamatrix.errors import UserError

CASE = """title = "many build options"
[[variant]]
name = "v"
source = "k.cu"
frontend = "nvcc"
[variant.defines]
{defines}
"""


def _case(tmp_path: Path, names: int, values: int) -> Path:
    folder = tmp_path / "cases" / "many"
    folder.mkdir(parents=True)
    (folder / "k.cu").write_text("__global__ void k() {}\n")
    listed = ", ".join(f'"{v}"' for v in range(values))
    defines = "\n".join(f"D{i} = [{listed}]" for i in range(names))
    (folder / "case.toml").write_text(CASE.format(defines=defines))
    return folder


def test_the_most_combinations_load(tmp_path: Path) -> None:
    case = load_case(_case(tmp_path, 10, 2))  # 2^10 = 1024
    assert len(case.variants) == MAX_DEFINE_COMBINATIONS == 1024


@pytest.mark.parametrize(("names", "values"), [(11, 2), (9, 10)])
def test_more_is_one_line_at_once(tmp_path: Path, names: int, values: int) -> None:
    with pytest.raises(UserError, match=r"variant\[0\]\.defines|defines") as said:
        load_case(_case(tmp_path, names, values))
    assert f"{values ** names:,} combinations" in str(said.value)
    assert "\n" not in str(said.value)
