"""Issue 71, point 2: a header or a name the cell's CCCL lacks is named with the first CCCL
release that has it, read off the real nvidia-cuda-cccl(-cu12) wheels' headers (fetched by
byte ranges into the cache, as a header library's are, and kept there). Checked by hand:
NVRTC 12.4 and 12.6 cannot open <cuda/cmath>, NVRTC 12.8 compiles cuda::ceil_div from it;
nvcc 13.0 lacks cuda::fast_mod_div and compiles it with CCCL 13.1.115's headers ahead."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from conftest import cudamatrix, private_cache, write_case
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


# Issue 82, items 7 and 8: an xfail cell's warm re-run asks nothing again, and a runner
# without the index (here: a refused one) served the compile side's cache has the finding.
GUARDED_VARIANT = """
[[variant]]
name = "guarded"
source = "guarded.cu"
frontend = "nvcc"
flags = ["-std=c++17"]
  [[variant.expect]]
  outcome = "fail"
  stage = "compile"
"""
GUARDED = """\
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
__device__ inline int twice(int q) { return 2 * q; }
#endif
__global__ void unpack(int *x) { x[threadIdx.x] = twice(x[threadIdx.x]); }
"""
# pip as a runner without the index has it: a refused index, nothing else, no retries.
OFFLINE = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_EXTRA_INDEX_URL": "",
           "PIP_FIND_LINKS": "", "PIP_RETRIES": "0", "PIP_CONFIG_FILE": "/dev/null"}


def _counting_toolkit(root: Path, calls: Path) -> Path:
    """CUDA 13.0 as it is installed, its nvcc behind a wrapper that notes each call."""
    (root / "bin").mkdir(parents=True)
    for entry in CUDA_13.iterdir():
        if entry.name != "bin":
            (root / entry.name).symlink_to(entry)
    for tool in (CUDA_13 / "bin").iterdir():
        if tool.name != "nvcc":
            (root / "bin" / tool.name).symlink_to(tool)
    wrapper = root / "bin" / "nvcc"
    wrapper.write_text(f"#!/bin/sh\necho \"$*\" >> '{calls}'\n"
                       f"exec '{CUDA_13 / 'bin' / 'nvcc'}' \"$@\"\n")
    wrapper.chmod(0o755)
    return root


def _compiles(calls: Path) -> int:
    """The wrapper's calls on a case's source: compiles and the searches' preprocessing."""
    if not calls.exists():
        return 0
    return sum(any(f"{name}.cu" in line for name in ("member", "guarded"))
               for line in calls.read_text().splitlines())


@pytest.mark.skipif(not (CUDA_13 / "bin" / "nvcc").is_file(), reason="needs CUDA 13.0 installed")
def test_an_xfails_warm_rerun_and_an_offline_runner_search_nothing(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", "cccl-newer", CASE + GUARDED_VARIANT,
               {"member.cu": MEMBER, "guarded.cu": GUARDED})
    calls = tmp_path / "nvcc-calls"
    toolkit = _counting_toolkit(tmp_path / "cuda", calls)
    built = private_cache(tmp_path)

    def run(out: str, cache: Path, *more: str, env: dict[str, str] | None = None) -> dict:
        done = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--case", "cccl-newer",
                          "--toolkit", "13.0", "--arch", "sm_80", "--provider", "host",
                          "--no-gpu", "--cache", str(cache), *more, out=tmp_path / out,
                          env={"CUDA_HOME": str(toolkit), **(env or {})})
        cells = {c["variant"]: c for c in done.cells().values()}
        assert all(c["outcome"] == "xfail" for c in cells.values()), done.output
        return cells

    cold = run("cold", built)
    assert cold["member"]["diagnosis"]["rule"] == "cccl-from-release"
    assert cold["guarded"]["stages"][0]["details"]["since_arch"]["arch"] == "sm_90"
    searched = _compiles(calls)
    assert searched > 2  # the two compiles, then the since-which-arch preprocessing

    # The same cache again: no compile and no search compile.
    warm = run("warm", built, "--always-run")
    assert _compiles(calls) == searched, calls.read_text()
    assert warm["member"]["diagnosis"]["rule"] == "cccl-from-release"
    assert warm["guarded"]["diagnosis"]["rule"] == cold["guarded"]["diagnosis"]["rule"]

    # A runner without the index, served the compile side's cache: every finding there.
    runner = run("runner", tmp_path / "runner-cache", "--compile-cache-from", str(built),
                 env=OFFLINE)
    assert _compiles(calls) == searched, calls.read_text()
    assert runner["member"]["diagnosis"]["title"] == ("cuda::fast_mod_div is in CCCL from "
                                                      "13.1.115 on (toolkit 13.1)"), runner
    assert runner["guarded"]["diagnosis"] == warm["guarded"]["diagnosis"]
