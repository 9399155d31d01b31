"""`--order`: the plan's order, its reverse, or the longest expected first; the cells
start in that order and no verdict depends on it (issue 47's determinism check)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ADD_KERNEL, TWO_COMPILERS_CASE, cudamatrix, write_case


def test_the_reversed_order_starts_the_last_cell_first_with_the_same_verdicts(
        tmp_path: Path) -> None:
    write_case(tmp_path / "cases", "order", TWO_COMPILERS_CASE, {"k.cu": ADD_KERNEL})
    started, verdicts = {}, {}
    for order in ("plan", "reversed"):
        run = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--case", "order",
                         "--toolkit", "13.0", "--arch", "sm_80", "--arch", "sm_90", "-j", "1",
                         "--no-gpu", "--compile-apart", "--no-compile-cache", "--order", order,
                         out=tmp_path / order)
        assert run.code == 0, run.output
        started[order] = re.findall(r"^\[\d+/4\] (\S+):", run.output, re.MULTILINE)
        verdicts[order] = {i: (c["outcome"], c["stage"], c["message"])
                           for i, c in run.cells().items()}
    assert len(started["plan"]) == 4
    assert started["reversed"] == started["plan"][::-1]
    assert verdicts["plan"] == verdicts["reversed"]
