"""Issue 71, point 2: a header or a name the cell's CCCL lacks is named with the first CCCL
release that has it, read off the real nvidia-cuda-cccl(-cu12) wheels' headers (fetched by
byte ranges into the cache, as a header library's are, and kept there). Checked by hand:
NVRTC 12.4 and 12.6 cannot open <cuda/cmath>, NVRTC 12.8 compiles cuda::ceil_div from it;
nvcc 13.0 lacks cuda::fast_mod_div and compiles it with CCCL 13.1.115's headers ahead."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from conftest import cudamatrix, write_case
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.options import DEFAULT_MATRIX, default_cache
from cudamatrix.providers.first_release import Lacking, for_run

CUDA_13 = Path("/usr/local/cuda-13.0")


@pytest.mark.parametrize("lack, after, release, toolkit", [
    (Lacking("name", "cuda::fast_mod_div"), "13.0.85", "13.1.115", "13.1"),
    (Lacking("header", "cuda/cmath"), "12.4.127", "12.8.90", "12.8"),
    # FlashInfer's sampling kernel on CUDA 12.4 (tests/data/logs/cccl-newer-than-toolkit-2).
    (Lacking("name", "cuda::maximum"), "12.4.127", "12.9.27", "12.9"),
])
def test_the_first_cccl_release_that_has_it(lack: Lacking, after: str, release: str,
                                            toolkit: str) -> None:
    lookups = for_run(load_matrix(DEFAULT_MATRIX), default_cache(), InputLedger())
    assert lookups is not None
    found = lookups.find(lack, Version(after))
    assert found is not None and (found.release, found.toolkit) == (release, toolkit), found
    # Every release between the cell's and the answer was read and lacks it.
    assert found.checked[-1] == release and len(found.checked) >= 1


CASE = """\
title = "a CCCL name newer than the toolkit's"

[[variant]]
name = "member"
source = "member.cu"
frontend = "nvcc"
  [[variant.expect]]
  outcome = "fail"
  stage = "compile"
"""
MEMBER = """\
#include <cuda/cmath>
struct Params { cuda::fast_mod_div<int> by; int *x; };
__global__ void divide(Params p) { p.x[threadIdx.x] = p.x[threadIdx.x] / p.by; }
"""


@pytest.mark.skipif(not (CUDA_13 / "bin" / "nvcc").is_file(), reason="needs CUDA 13.0 installed")
def test_a_run_names_the_release_a_cccl_name_comes_with(tmp_path: Path) -> None:
    """EDG says only "qualified name is not allowed" (was: no rule matched); the run reads
    the name under its caret and looks it up."""
    write_case(tmp_path / "cases", "cccl-newer", CASE, {"member.cu": MEMBER})
    run = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--case", "cccl-newer",
                     "--toolkit", "13.0", "--arch", "sm_80", "--provider", "host", "--no-gpu",
                     "--no-compile-cache", out=tmp_path / "out",
                     env={"CUDA_HOME": str(CUDA_13)})
    cell = next(iter(run.cells().values()))
    assert (cell["outcome"], cell["stage"]) == ("xfail", "compile"), run.output
    assert cell["message"].endswith("error: qualified name is not allowed")
    found = cell["stages"][0]["details"]["since_release"]
    assert (found["name"], found["release"], found["toolkit"]) == ("cuda::fast_mod_div",
                                                                   "13.1.115", "13.1")
    diagnosis = cell["diagnosis"]
    assert diagnosis["rule"] == "cccl-from-release", diagnosis
    assert diagnosis["title"] == "cuda::fast_mod_div is in CCCL from 13.1.115 on (toolkit 13.1)"
