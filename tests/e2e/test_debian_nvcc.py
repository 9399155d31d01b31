"""A real nvcc for 11.8 and 12.4 from Debian's non-free archive, no root (issue 12, point 2):
fetched, its signatures and hashes checked, unpacked into the cache next to the same
release's wheels; the nvcc and CUTLASS cells of those toolkits then build instead of
skipping, with the host compiler each release accepts."""

from __future__ import annotations

import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import Run, cudamatrix, main_job_cache, write_case
from cudamatrix.common.signed_text import verified_text
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.errors import EnvironmentUnavailable
from cudamatrix.providers.debian import ARCHIVE, KEYRING
from cudamatrix.providers.host_compiler import choose_gcc, installed_gcc

KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n'
# The release's nvcc builds it and its SASS holds the multiply.
SCALE_CASE = """
    title = "nvcc of the release"
    [[variant]]
    name = "v"
    source = "k.cu"
    frontend = "nvcc"
      [[variant.artifact]]
      in = "sass"
      contains = "FMUL|FADD"
"""


@pytest.fixture(scope="module")
def nvcc_run(tmp_path_factory: pytest.TempPathFactory, main_job: Run):
    root = tmp_path_factory.mktemp("debian-nvcc")
    write_case(root / "c", "scale", SCALE_CASE, {"k.cu": KERNEL})
    return cudamatrix("run", "--corpus", str(root / "c"), "--case", "scale", "--known-bugs",
                      "--case", "cutlass-sm90", "--toolkit", "11.8", "--toolkit", "12.4",
                      "--arch", "sm_80", "--arch", "sm_90", "--arch", "sm_90a",
                      # CUTLASS's cells of these toolkits were compiled by the main job:
                      # read from its cache, the same verdicts, not compiled again.
                      "--compile-cache-from", str(main_job_cache(main_job)),
                      out=root / "out", timeout=1800)


def test_nvcc_cells_of_11_8_and_12_4_build(nvcc_run) -> None:
    tools = nvcc_run.results["run"]["toolkits"]
    assert tools["12.4"]["tool_versions"]["nvcc"] == "12.4.131"
    assert "trixie" in tools["12.4"]["tool_versions"]["nvcc_from"]
    assert tools["11.8"]["tool_versions"]["nvcc"] == "11.8.89"
    assert "bookworm" in tools["11.8"]["tool_versions"]["nvcc_from"]
    cells = nvcc_run.cells()
    for toolkit in ("11.8", "12.4"):
        cell = cells[f"scale/v/{toolkit}/sm_80"]
        if 11 in installed_gcc() or toolkit == "12.4":
            assert cell["outcome"] == "pass", cell["message"]
        else:
            assert cell["outcome"] == "skip" and "GCC up to 11" in cell["message"]
    # CUTLASS 4.2's Hopper GEMM, built by 12.4 for sm_90a: a real build, no longer a skip.
    gemm = cells["cutlass-sm90/unguarded/12.4/sm_90a/cutlass-4.2.0"]
    assert gemm["outcome"] == "pass"
    assert "cache_from" in gemm["stages"][0]["details"]  # the main job compiled it
    assert not [c for c in cells.values() if c["outcome"] in ("fail", "error", "xpass")]


def test_each_nvcc_lists_the_archs_the_matrix_keeps_for_it(nvcc_run) -> None:
    """Issue 12, point 5: the arch table is checked against nvcc's own --list-gpu-code too
    (11.8's and 12.4's from Debian here), and a disagreement would be a run warning."""
    from cudamatrix.config.defaults import DEFAULT_MATRIX
    from cudamatrix.config.matrix import load_matrix
    from cudamatrix.providers.toolkits import WheelsToolkits

    class Quiet:
        def note(self, text: str) -> None:
            pass

    matrix = load_matrix(DEFAULT_MATRIX)
    provider = WheelsToolkits(matrix, Path(os.environ["CUDAMATRIX_CACHE"]), Quiet(), InputLedger())
    for toolkit, first, last in (("11.8", "sm_35", "sm_90"), ("12.4", "sm_50", "sm_90")):
        listed = provider.toolkit(toolkit).nvcc_archs
        assert listed[0] == first and listed[-1] == last, listed
        assert matrix.arch_disagreements(toolkit, listed, "nvcc") == []
    assert "whose nvcc" not in nvcc_run.output


def test_nvcc_11_8_refuses_a_newer_gcc_as_the_matrix_says(nvcc_run, tmp_path: Path) -> None:
    """gcc_max is data: the real nvcc 11.8 refuses GCC 12 (and the run never hands it one)."""
    newest = max(installed_gcc())
    if newest <= 11:
        pytest.skip("no GCC newer than 11 here to be refused")
    nvcc = next(Path.home().glob(".cache/cudamatrix/debian/bookworm-11.8/usr/lib/"
                                 "nvidia-cuda-toolkit/bin/nvcc"), None)
    assert nvcc is not None
    (tmp_path / "k.cu").write_text(KERNEL)
    done = subprocess.run([str(nvcc), "-ccbin", installed_gcc()[newest], "-cubin",
                           "-arch=sm_80", "-o", str(tmp_path / "k.cubin"),
                           str(tmp_path / "k.cu")], capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "unsupported GNU version" in done.stderr
    program, why = choose_gcc("11.8", 5, installed_gcc())
    assert program is None and why and "accepts GCC up to 5" in why


def test_a_tampered_release_file_fails_its_signature() -> None:
    with urllib.request.urlopen(f"{ARCHIVE}/dists/trixie/InRelease", timeout=120) as got:
        text = got.read()
    assert "Codename: trixie" in verified_text(text, KEYRING, "trixie")  # the real one passes
    with pytest.raises(EnvironmentUnavailable, match="signature check"):
        verified_text(text.replace(b"non-free", b"non-frei", 1), KEYRING, "trixie")


def test_old_cutlass_headers_fail_on_12_4_and_11_8_as_on_13_0(tmp_path: Path) -> None:
    """The seed case's expectation said CUTLASS 3.5 and older fail only with CUDA 13; with a
    real nvcc 12.4 the same build stops at the same line: its builder headers depend on
    the include order, whatever the toolkit. A `fail` before the expectation was fixed;
    and again for 11.8 (the nightly tier's only two failures): it stops there too, before
    reaching the builders' own "Unsupported Toolkit" assertion that CUTLASS 4.2 gives."""
    cells = ["cutlass-sm90/unguarded/12.4/sm_90a/cutlass-3.4.1",
             "cutlass-sm90/unguarded/11.8/sm_90/cutlass-3.5.0"]
    run = cudamatrix("run", "--known-bugs", "--tier", "nightly",
                     *(word for cell in cells for word in ("--cell", cell)),
                     out=tmp_path / "out", timeout=1800)
    assert run.code == 0, run.output[-3000:]
    for cell in cells:
        found = run.cells()[cell]
        assert found["outcome"] == "xfail", found["message"]
        assert 'identifier "sizeof_bits_v" is undefined' in found["message"]
        assert found["versions"]["nvcc"] == ("12.4.131" if "/12.4/" in cell else "11.8.89")


def _prepare_into(cache: str) -> str:
    from cudamatrix.providers.debian import prepare_debian_nvcc

    return prepare_debian_nvcc("bookworm", "11.8", Path(cache), (), (), InputLedger()).nvcc


def test_two_processes_filling_one_cache_both_get_debian_nvcc(tmp_path: Path) -> None:
    """Two shards of one machine (or two test workers) sharing a cache, both the first to
    need Debian's nvcc: the second waits for the first's unpack instead of removing its
    half-made folder (before, one of them lost its toolkit to the other's clean-up)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(2) as pool:
        found = pool.map(_prepare_into, [str(tmp_path)] * 2)
    assert found[0] == found[1]
    said = subprocess.run([found[0], "--version"], capture_output=True, text=True, check=False)
    assert "release 11.8" in said.stdout, said.stdout + said.stderr
    assert not list((tmp_path / "debian").glob("*.partial*"))


def test_nvcc_12_5_from_debian_experimental(tmp_path: Path) -> None:
    """Issue 61, point 6: 12.5 was all skips (its wheels have ptxas and libnvvm, no nvcc
    driver, cicc or fatbinary); Debian's experimental suite has nvidia-cuda-toolkit
    12.5.40, fetched and checked as trixie's and bookworm's are, and its cells build."""
    write_case(tmp_path / "c", "scale", SCALE_CASE, {"k.cu": KERNEL})
    # From a folder of no project: this case alone (the repository's own is the corpus).
    run = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--toolkit", "12.5",
                     "--arch", "sm_80", "--arch", "sm_90a", out=tmp_path / "out",
                     cwd=tmp_path, timeout=1800)
    assert run.code == 0, run.output[-3000:]
    tools = run.results["run"]["toolkits"]["12.5"]["tool_versions"]
    assert tools["nvcc"] == "12.5.40" and "(experimental)" in tools["nvcc_from"], tools
    for arch in ("sm_80", "sm_90a"):
        cell = run.cells()[f"scale/v/12.5/{arch}"]
        assert cell["outcome"] == "pass", cell["message"]
