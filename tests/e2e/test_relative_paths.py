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


# Issue 47: a case naming its source where it lies, in a vendored tree beside the case,
# with include folders written from the case folder (as `validate` reads them). The nvcc
# frontend resolved them against the source's folder: every cell failed `ggml.h: No such
# file or directory`.
VENDORED_CASE = """\
title = "a source in a sibling tree"
{variants}
"""
VENDORED_VARIANT = """
[[variant]]
name = "{frontend}"
source = "../vendor/src/cuda/norm.cu"
frontend = "{frontend}"
flags = ["-I../vendor/include", "-include", "../vendor/include/pre.h"]
kernel = "norm_f32"
only = {{ toolkit = "{toolkit}" }}
"""
# The toolkit each frontend is tried on here: clang 19 builds 12.x (CUDA 13 dropped a
# header its wrapper includes), nvcc comes as a wheel from 13.0 on.
VENDORED_TOOLKIT = {"nvcc": "13.0", "nvrtc": "13.0", "clang": "12.8"}


def _vendored_tree(root: Path, frontends: list[str]) -> None:
    variants = "".join(VENDORED_VARIANT.format(frontend=f, toolkit=VENDORED_TOOLKIT[f])
                       for f in frontends)
    write_case(root, "vendored", VENDORED_CASE.format(variants=variants), {})
    (root / "vendor" / "include").mkdir(parents=True)
    (root / "vendor" / "src" / "cuda").mkdir(parents=True)
    (root / "vendor" / "include" / "ggml.h").write_text("#pragma once\n#define GGML_SCALE 2.0f\n")
    (root / "vendor" / "include" / "pre.h").write_text("#pragma once\n#define PRE_INCLUDED 1\n")
    (root / "vendor" / "src" / "cuda" / "common.cuh").write_text(
        '#pragma once\n#include "ggml.h"\n#ifndef PRE_INCLUDED\n#error "-include not read"\n'
        '#endif\n')
    (root / "vendor" / "src" / "cuda" / "norm.cu").write_text(
        '#include "common.cuh"\nextern "C" __global__ void norm_f32(float *x) '
        "{ x[threadIdx.x] *= GGML_SCALE; }\n")


def test_a_source_in_a_sibling_tree_compiles_with_the_case_folders_include_paths(
        tmp_path: Path) -> None:
    """Every frontend that compiles here reads `-I../vendor/include` and `-include` from
    the case folder, not from the source's (nvcc's cells were all `ggml.h: No such file`)."""
    import shutil

    frontends = ["nvcc", "nvrtc", *(["clang"] if shutil.which("clang++-19") else [])]
    _vendored_tree(tmp_path / "cases", frontends)
    checked = cudamatrix("validate", "--corpus", str(tmp_path / "cases"))
    assert checked.code == 0, checked.output
    toolkits = sorted({VENDORED_TOOLKIT[f] for f in frontends})
    run = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--case", "vendored",
                     "--arch", "sm_80", *(w for t in toolkits for w in ("--toolkit", t)),
                     "--no-gpu", out=tmp_path / "out")
    cells = run.cells()
    assert {c.split("/")[1] for c in cells} == set(frontends), run.output
    for cell in cells.values():
        assert cell["outcome"] == "pass", (cell["id"], cell["message"], cell["stages"][0]["log"])
