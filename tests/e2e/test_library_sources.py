"""A library version from the project's own source (issue 14, point 2): a CUTLASS checkout
named in cudamatrix.toml (`[libraries.cutlass.sources] "4.2.0+local" = "path:..."`) is
compiled against, beside the PyPI release, each cell recording which it was. Real nvcc
(the 13.0 wheel), the real CUTLASS 4.2.0 headers, copied and changed."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

from conftest import cudamatrix, write_case

KERNEL = """\
#include <cutlass/cutlass.h>
#include <cutlass/numeric_types.h>
extern "C" __global__ void scale(cutlass::half_t *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * cutlass::half_t(2.0f);
}
"""


def _cutlass_headers() -> Path:
    """The CUTLASS 4.2.0 headers the run installed (nvidia-cutlass's layout)."""
    cache = Path(os.environ.get("CUDAMATRIX_CACHE") or Path.home() / ".cache" / "cudamatrix")
    return cache / "libraries" / "cutlass-4.2.0" / "cutlass_library" / "source"


def test_a_cutlass_checkout_named_by_the_project_is_what_its_cells_compile(tmp_path: Path) -> None:
    project = tmp_path / "mylib"
    write_case(project / "cases", "half-scale", """
        title = "a kernel on CUTLASS's half_t"
        [[variant]]
        name = "nvcc"
        source = "scale.cu"
        frontend = "cutlass"
        kernel = "scale"
        flags = ["-std=c++17"]
    """, {"scale.cu": KERNEL})
    (project / "cudamatrix.toml").write_text(textwrap.dedent("""
        cases = ["cases"]
        [tiers.pr]
        toolkit = ["13.0"]
        arch = ["sm_80"]
        cutlass = ["4.2.0", "4.2.0+local"]
        [libraries.cutlass.sources]
        "4.2.0+local" = "path:../cutlass-checkout"
    """))
    # No checkout there yet: the user's mistake, named, exit 2, the release's cell still run.
    first = cudamatrix("run", "--case", "half-scale", cwd=project, out=tmp_path / "first")
    assert first.code == 2, first.output[-3000:]
    assert f"no folder {tmp_path / 'cutlass-checkout'}" in first.output
    assert first.cells()["half-scale/nvcc/13.0/sm_80/cutlass-4.2.0"]["outcome"] == "pass"
    # The checkout: CUTLASS's own include folders, as a clone of the repository has them.
    checkout = tmp_path / "cutlass-checkout"
    source = _cutlass_headers()
    shutil.copytree(source / "include", checkout / "include")
    shutil.copytree(source / "tools" / "util" / "include", checkout / "tools" / "util" / "include")
    run = cudamatrix("run", "--case", "half-scale", cwd=project, out=tmp_path / "same")
    assert run.code == 0, run.output[-3000:]
    cells = run.cells()
    local = cells["half-scale/nvcc/13.0/sm_80/cutlass-4.2.0+local"]
    assert local["outcome"] == "pass", local["message"]
    assert local["versions"]["cutlass (source)"].startswith(f"path:{checkout}")
    assert cells["half-scale/nvcc/13.0/sm_80/cutlass-4.2.0"]["outcome"] == "pass"
    # A change in the checkout reaches its cells, and only them.
    header = checkout / "include" / "cutlass" / "cutlass.h"
    header.write_text('#error "the local checkout was compiled"\n' + header.read_text())
    changed = cudamatrix("run", "--case", "half-scale", cwd=project, out=tmp_path / "changed")
    cells = changed.cells()
    assert changed.code == 1
    broken = cells["half-scale/nvcc/13.0/sm_80/cutlass-4.2.0+local"]
    assert broken["outcome"] == "fail" and "the local checkout was compiled" in broken["message"]
    assert cells["half-scale/nvcc/13.0/sm_80/cutlass-4.2.0"]["outcome"] == "pass"
    # Its compiles cached, the run into the same folder again records itself, and the one
    # after answers from that record; an edit in the checkout (read in place, outside
    # the project's cases) runs it again and is compiled.
    assert cudamatrix("run", "--case", "half-scale", cwd=project,
                      out=tmp_path / "changed").code == 1
    standing = cudamatrix("run", "--case", "half-scale", cwd=project, out=tmp_path / "changed")
    assert standing.code == 1 and standing.output.startswith("up to date: "), standing.output
    header.write_text(header.read_text().replace('#error "the local checkout was compiled"\n',
                                                 ""))
    fixed = cudamatrix("run", "--case", "half-scale", cwd=project, out=tmp_path / "changed")
    assert f"running: {header} changed" in fixed.output, fixed.output[-3000:]
    assert fixed.code == 0, fixed.output[-3000:]
