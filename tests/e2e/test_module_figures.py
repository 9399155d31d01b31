"""Issue 47, point 3: where an NVRTC log holds no ptxas figures (NVRTC's own cache
answered), they come from the built module: registers, stack and shared memory from the
cubin (`cuobjdump -res-usage`), spills from the toolkit's ptxas on the kept PTX; the
record says where they came from. The same kernel's figures from both ways agree."""

from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import REPO, cudamatrix
from cudamatrix.stages.cell.files import CUBIN, JOB_FILE, PTX
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.compile.built import build_success


def test_figures_from_the_module_match_the_compilers_own(tmp_path: Path) -> None:
    run = cudamatrix("run", "--corpus", str(REPO / "tests" / "data" / "hermetic"), "--case",
                     "budget", "--toolkit", "13.0", "--arch", "sm_80", "--no-gpu",
                     "--no-compile-cache", out=tmp_path / "out")
    assert run.code == 0, run.output[-2000:]
    [cell] = run.results["cells"]
    compiled = cell["stages"][0]["details"]
    assert compiled["resources_from"] == "the compiler's log (ptxas -v)"
    [folder] = (tmp_path / "out" / "artifacts").iterdir()
    job = Job.from_json((folder / JOB_FILE).read_text())
    # As a cache hit leaves it: NVRTC's log without a single ptxas line.
    silent = build_success(job, "NVRTC 13.0\n", time.monotonic(), {}, folder / PTX,
                           folder / CUBIN, figures_from_module=True)
    details = silent.result.details
    assert details["resources_from"].startswith("the cubin (cuobjdump -res-usage)"), details
    [mine] = details["resources"]
    [theirs] = compiled["resources"]
    for key in ("registers", "stack_bytes", "smem_bytes", "spill_store_bytes",
                "spill_load_bytes"):
        assert mine[key] == theirs[key], (key, json.dumps(mine), json.dumps(theirs))
