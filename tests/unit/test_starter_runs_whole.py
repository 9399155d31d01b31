"""Issue 70, point 1: the starter runs whole. `cudamatrix init` writes a tier whose every
cell this machine (no GPU, toolkits from the wheels) can build: its build case is planned
only on the toolkits whose wheels hold a whole nvcc with its static runtime (13.x), and
its case.toml says so; and where a cell is skipped all the same, the Markdown says its fix
whole, never cut mid-sentence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import cudamatrix_in_process
from cudamatrix.common.versions import parse_version
from cudamatrix.record.results import CellResult
from cudamatrix.reports.markdown import stopped_lines


def test_the_starter_plans_its_build_case_only_where_the_wheels_build_it(
        tmp_path: Path) -> None:
    made = cudamatrix_in_process("init", cwd=tmp_path)
    assert made.code == 0, made.output
    listed = cudamatrix_in_process("list", cwd=tmp_path)
    assert listed.code == 0, listed.output
    cells = listed.output.split()
    built = [c for c in cells if c.startswith("saxpy-build/")]
    kernels = [c for c in cells if c.startswith("saxpy/")]
    # The 12.x wheels hold no nvcc (12.8) or no libcudadevrt (12.4, Debian's nvcc over them).
    assert built and all(parse_version(c.split("/")[2]).major >= 13 for c in built), built
    # The NVRTC example still covers every toolkit of the tier.
    assert {c.split("/")[2] for c in kernels} == {"12.4", "12.8", "13.0"}, kernels
    # The file says why, where the user reads the build case (and takes the line out for a
    # provider that builds 12.x); a tier trimmed to 13.0 alone still plans it.
    said = (tmp_path / "cudamatrix-cases" / "saxpy-build" / "case.toml").read_text()
    assert "libcudadevrt" in said and "no nvcc" in said, said
    config = tmp_path / "cudamatrix.toml"
    config.write_text(config.read_text().replace('["12.4", "12.8", "13.0"]', '["13.0"]'))
    trimmed = cudamatrix_in_process("list", cwd=tmp_path)
    assert trimmed.code == 0 and len(trimmed.output.split()) == 4, trimmed.output


def _skipped(message: str) -> CellResult:
    data: dict[str, Any] = {
        "case": "c", "variant": "v", "toolkit": "12.8", "arch": "sm_80", "frontend": "build",
        "outcome": "skip", "stage": "compile", "message": message,
        "stages": [{"stage": "compile", "status": "unavailable", "message": message}]}
    return CellResult.from_dict(data)


def test_a_skips_fix_is_said_whole() -> None:
    """The 12.8 build's reason ends in its fix; the Markdown cut it at 100 characters
    ("... Debian packages nvcc for 11.8, 12.4…")."""
    reason = ("toolkit 12.8 (wheels) has no nvcc; the build frontend needs it; Debian packages "
              "nvcc for 11.8, 12.4 and 12.5 only, NVIDIA's images (--docker-flavour nvidia) "
              "or a host install have the others")
    lines = [ln for ln in stopped_lines([_skipped(reason)]) if ln]
    assert len(lines) == 1 and "or a host install have the others" in lines[0], lines
