"""A run given relative folders (`--cache cache --out out --corpus cases`), as a user types
them in their project: the compilers live under the cache, and each cell's compiler runs
in the cell's own folder, so a toolkit path kept relative named nothing there (every nvcc
and ptxas cell was an `error`: FileNotFoundError for `cache/toolkits/.../bin/nvcc`)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ADD_KERNEL, TWO_COMPILERS_CASE, cudamatrix, private_cache, write_case


def test_relative_cache_out_and_corpus(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", "relative", TWO_COMPILERS_CASE, {"k.cu": ADD_KERNEL})
    private_cache(tmp_path)  # tmp_path/cache, the downloads shared by link
    run = cudamatrix("run", "--corpus", "cases", "--cache", "cache", "--out", "out",
                     "--toolkit", "13.0", "--arch", "sm_90", "--no-gpu", cwd=tmp_path)
    assert run.code == 0, run.output
    cells = {c["id"]: c for c in json.loads((tmp_path / "out" / "results.json").read_text())
             ["cells"]}
    assert set(cells) == {"relative/nvcc/13.0/sm_90", "relative/nvrtc-ptxas/13.0/sm_90"}
    for cell in cells.values():
        assert cell["outcome"] == "pass", (cell["id"], cell["message"])
        assert cell["stages"][0]["status"] == "ok", cell["stages"][0]
    assert len(list((tmp_path / "out").rglob("*.cubin"))) >= 2


def test_a_rerun_keeps_only_its_own_cells(tmp_path: Path) -> None:
    """The last run's cells and artifacts are moved aside and removed beside the run
    (cudamatrix.common.removal): none is left, and nothing of the removal either."""
    write_case(tmp_path / "cases", "relative", TWO_COMPILERS_CASE, {"k.cu": ADD_KERNEL})
    args = ("run", "--corpus", "cases", "--toolkit", "13.0", "--arch", "sm_90", "--no-gpu")
    first = cudamatrix(*args, out=tmp_path / "out", cwd=tmp_path)
    assert first.code == 0, first.output
    assert len(list((tmp_path / "out" / "artifacts").iterdir())) == 2
    again = cudamatrix(*args, "--cell", "relative/nvcc/13.0/sm_90", out=tmp_path / "out",
                       cwd=tmp_path)
    assert again.code == 0, again.output
    cells = [p.name for p in (tmp_path / "out" / "cells").iterdir()]
    folders = [p.name for p in (tmp_path / "out" / "artifacts").iterdir()]
    assert len(cells) == 1 and cells[0].startswith("relative__nvcc__13.0__sm_90")
    assert folders == [cells[0].removesuffix(".json")]
    assert not (tmp_path / "out" / ".removing").exists()
