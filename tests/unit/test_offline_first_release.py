"""A runner that cannot reach the package index (issue 82, item 7): FlashInfer's RoPE on
CUDA 13.0 lacks `cuda::fast_mod_div` (CCCL 13.1 has it), and a self-hosted GPU runner
without internet said "No rule matched", the since-which-release look-up having nowhere
to read the releases from. Now the cell says it could not look and why; and a finding
made where the index is reachable is kept with the compile it explains, so a runner
served that compile (--compile-cache-from: a restored CI cache, the compile side's) has
it without looking, and a warm re-run asks neither the compiler nor the index again
(item 8).

Real runs of the tool on a made-up host toolkit whose nvcc prints what nvcc 13.0 printed
for that code (tests/data/logs/cccl-from-release.json) and counts its calls; the index a
closed port of 127.0.0.1 (refused), or pip's --no-index; the CCCL releases' headers laid
out in the compile side's cache as the wheels provider leaves them."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from cudamatrix.common import package_index
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.options import DEFAULT_MATRIX
from cudamatrix.providers.first_release import SINCE_RELEASE_UNKNOWN, for_run, with_first_release
from cudamatrix.providers.wheels import MARKER
from cudamatrix.record.diagnose import diagnose_stage
from cudamatrix.stages.cell.result import StageResult

LOG = json.loads((Path(__file__).parents[1] / "data" / "logs" / "cccl-from-release.json")
                 .read_text())["stage"]["log"]
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


def _toolkit(root: Path, calls: Path) -> Path:
    """A CUDA 13.0 install as the host provider reads one: its nvcc answers its version,
    and to a compile prints nvcc 13.0's errors for MEMBER and fails, noting each call."""
    printed = root / "nvcc-said.txt"
    root.mkdir(parents=True)
    printed.write_text(LOG.split("\n", 1)[1] + "\n")
    for tool in ("nvcc", "ptxas"):
        path = root / "bin" / tool
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "#!/bin/sh\n"
            'case "$*" in *--version*) echo "Cuda compilation tools, release 13.0, V13.0.88";'
            " exit 0;; esac\n"
            f"echo \"$*\" >> '{calls}'\ncat '{printed}'\nexit 2\n")
        path.chmod(0o755)
    (root / "lib64").mkdir()
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime.h").write_text("#pragma once\n")
    return root


def _cccl_release(cache: Path, version: str, has_it: bool) -> None:
    """A CCCL release's headers in `cache` as the wheels provider leaves them (its marker
    saying which pin it holds): complete (cub/, nv/target, cuda/pipeline), with
    `cuda::fast_mod_div` declared where `has_it`."""
    target = cache / "libraries" / f"cccl-{version}-headers"
    include = target / "nvidia" / "cu13" / "include" / "cccl"
    headers = {"cub/cub.cuh": "#pragma once\n", "nv/target": "#pragma once\n",
               "cuda/pipeline": "#pragma once\n", "cuda/cmath": "#pragma once\n"}
    if has_it:
        headers["cuda/__cmath/fast_modulo_division.h"] = (
            "namespace cuda {\ntemplate <class _Tp>\nclass fast_mod_div\n{\n};\n}\n")
    for name, text in headers.items():
        (include / name).parent.mkdir(parents=True, exist_ok=True)
        (include / name).write_text(text)
    (target / MARKER).write_text(json.dumps({"headers_of": f"nvidia-cuda-cccl=={version}.*",
                                             "include": [], "found": version}))


def _compiles(calls: Path) -> int:
    """How many times the made-up nvcc was asked to compile or preprocess the case's
    source (a toolkit's own probes, --help and --list-gpu-code, are not compiles)."""
    return sum("member.cu" in line for line in calls.read_text().splitlines())


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# pip as a runner without the index has it: no extra index, no find-links, no retries.
OFFLINE = {"PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "PIP_RETRIES": "0",
           "PIP_CONFIG_FILE": os.devnull}


def _run(tmp_path: Path, toolkit: Path, cache: Path, out: str, pip: dict[str, str],
         *more: str) -> dict:
    corpus = tmp_path / "cases"
    if not corpus.exists():
        (corpus / "cccl-newer").mkdir(parents=True)
        (corpus / "cccl-newer" / "case.toml").write_text(CASE)
        (corpus / "cccl-newer" / "member.cu").write_text(MEMBER)
    done = subprocess.run(
        [sys.executable, "-m", "cudamatrix", "run", "--corpus", str(corpus), "--case",
         "cccl-newer", "--toolkit", "13.0", "--arch", "sm_80", "--provider", "host",
         "--no-gpu", "--cache", str(cache), "--out", str(tmp_path / out), *more],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "CI": "1", "CUDA_HOME": str(toolkit), **OFFLINE, **pip})
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in said, said[-3000:]
    cells = json.loads((tmp_path / out / "results.json").read_text())["cells"]
    assert len(cells) == 1 and cells[0]["outcome"] == "xfail", said[-3000:]
    return dict(cells[0])


def test_a_runner_without_the_index_says_it_could_not_look_and_why(tmp_path: Path) -> None:
    calls = tmp_path / "nvcc-calls"
    toolkit = _toolkit(tmp_path / "cuda", calls)
    refused = {"PIP_INDEX_URL": f"http://127.0.0.1:{_closed_port()}/simple"}
    cell = _run(tmp_path, toolkit, tmp_path / "cache", "out", refused)
    diagnosis = cell["diagnosis"]
    assert diagnosis["rule"] == "cccl-release-not-looked-up", diagnosis
    title = diagnosis["title"]
    assert title.startswith("could not look up which release first has cuda::fast_mod_div: ")
    assert "Connection refused" in title and "\n" not in title, title
    # Nothing is kept that the headers did not say: the next run with the index looks.
    assert not (tmp_path / "cache" / "first-release").exists()
    assert "since_release" not in cell["stages"][0]["details"]


def test_pips_no_index_is_said_as_the_reason(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's own look-up over the default matrix's CCCL releases with pip told
    --no-index (PIP_NO_INDEX), as an offline runner's configuration has it."""
    for name, value in {**OFFLINE, "PIP_NO_INDEX": "1"}.items():
        monkeypatch.setenv(name, value)
    package_index.configured.cache_clear()
    try:
        lookups = for_run(load_matrix(DEFAULT_MATRIX), tmp_path / "cache", InputLedger())
        failed = StageResult("compile", "failed", LOG.splitlines()[1], LOG)
        stages = with_first_release([failed], lookups, {"nvcc": "13.0.88"}, "13.0")
    finally:
        package_index.configured.cache_clear()
    said = stages[0].details[SINCE_RELEASE_UNKNOWN]
    assert said["said"].startswith("could not look up which release first has "
                                   "`cuda::fast_mod_div`: no package index configured")
    diagnosis = diagnose_stage(failed.message, stages[0], True)
    assert diagnosis.rule == "cccl-release-not-looked-up", diagnosis


def test_the_compile_sides_finding_reaches_a_runner_without_the_index(tmp_path: Path) -> None:
    """The compile side (the releases' headers at hand) finds it and keeps it with the
    compile; the runner reads that compile cache (--compile-cache-from) with its own empty
    cache and a refused index: the finding is there, no compiler and no look-up asked."""
    calls = tmp_path / "nvcc-calls"
    toolkit = _toolkit(tmp_path / "cuda", calls)
    built = tmp_path / "built-cache"
    _cccl_release(built, "13.0.85", has_it=False)
    _cccl_release(built, "13.1.115", has_it=True)
    refused = {"PIP_INDEX_URL": f"http://127.0.0.1:{_closed_port()}/simple"}
    first = _run(tmp_path, toolkit, built, "built", refused)
    assert first["diagnosis"]["rule"] == "cccl-from-release", first["diagnosis"]
    compiled = _compiles(calls)
    assert compiled >= 1

    runner = _run(tmp_path, toolkit, tmp_path / "runner-cache", "runner", refused,
                  "--compile-cache-from", str(built))
    assert runner["diagnosis"]["rule"] == "cccl-from-release", runner["diagnosis"]
    assert runner["diagnosis"]["title"] == ("cuda::fast_mod_div is in CCCL from 13.1.115 on "
                                            "(toolkit 13.1)")
    assert runner["stages"][0]["details"]["cache_from"] == str(built)
    assert _compiles(calls) == compiled  # no compile, no search compile

    # A warm re-run on the compile side: the finding comes with the compile, the
    # releases' headers and the answers the look-up kept gone (a CI cache that restores
    # compile/ alone).
    shutil.rmtree(built / "first-release")
    shutil.rmtree(built / "libraries")
    again = _run(tmp_path, toolkit, built, "again", refused, "--always-run")
    assert again["diagnosis"]["rule"] == "cccl-from-release", again["diagnosis"]
    assert _compiles(calls) == compiled
