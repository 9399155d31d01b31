"""Cells that differ only in arch share one nvcc (a -gencode per arch), and each cell's
verdict, warnings, ptxas figures and shipped images are what its arch's build alone gives.

Real runs of the same cells, on the 13.0 wheel's nvcc and Debian's 12.4 nvcc: the
default (together: `auto`), --compile-apart (one nvcc per cell, as before; started in
reverse, --order reversed, so no verdict may depend on which cell went first) and, on
13.0, --compile-strategy threads (one nvcc building its archs side by side, issue 72) and
grouped (one nvcc, its archs one after another): each strategy the same verdicts. Each
kernel but one has an arch-specific `#warning` and arch-specific code, so a log split by
the wrong arch, or a library that kept its siblings' images, shows as a difference. A
group whose build fails in one arch's own step fails that cell and builds the rest
together again; one whose log cannot be split (nvcc's own warning, of no step) is built
apart, cell by cell, and says so. Threaded, a kernel that prints nothing but ptxas's
figures has its output split by arch; one that prints more cannot say whose a line is,
and its group is built again one arch after another, saying why.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import SHARED_CACHE, Run, cudamatrix, cudamatrix_in_process, has_gpu, write_case

KERNEL = """\
#include <cuda_runtime.h>
__global__ void scale(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#warning "pre-Hopper path"
    if (i < n) y[i] = x[i] * 2.0f;
#else
    if (i < n) y[i] = __fmaf_rn(x[i], 2.0f, 0.0f);
#endif
#if defined(__CUDA_ARCH__) && defined(REQUIRE_HOPPER) && __CUDA_ARCH__ < 900
#error "this build needs Hopper"
#endif
}
extern "C" int run_scale(const float *x, float *y, int n) {
    scale<<<(n + 255) / 256, 256>>>(x, y, n);
    cudaError_t launched = cudaGetLastError();  // no image for the GPU: said here
    return launched != cudaSuccess ? (int)launched : (int)cudaDeviceSynchronize();
}
"""

HOST_RUN = """\
  [variant.run]
  host = true
  args = [
    { name = "x", dtype = "float32", shape = [1000] },
    { name = "y", dtype = "float32", shape = [1000], output = true },
    { name = "n", dtype = "int32", value = 1000 },
  ]
  check = { y = "x * 2" }
"""

CASE = f"""\
title = "one nvcc for every arch"

[[variant]]
name = "library"
source = "k.cu"
frontend = "nvcc"
kernel = "run_scale"
{HOST_RUN}
[[variant]]
name = "kernel"
source = "k.cu"
frontend = "nvcc"
kernel = "scale"

[[variant]]
name = "guarded"
source = "k.cu"
frontend = "nvcc"
kernel = "run_scale"
flags = ["-DREQUIRE_HOPPER"]
{HOST_RUN}
  [[variant.expect]]
  when = {{ arch = "sm_80" }}
  outcome = "fail"
  stage = "compile"
  match = "needs Hopper"

[[variant]]
name = "late-name"
source = "z.cu"
frontend = "nvcc"
kernel = "run_scale"
{HOST_RUN}
[[variant]]
name = "clean"
source = "clean.cu"
frontend = "nvcc"
kernel = "scale"

[[variant]]
name = "nvcc-speaks"
source = "k.cu"
frontend = "nvcc"
kernel = "scale"
flags = ["-std=c++14", "-std=c++17"]
"""

CLEAN = """\
__global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = sinf(x[i]) * 2.0f;
}
"""
VARIANTS = 6
ARCHS = ("sm_80", "sm_90", "sm_90a")
TOOLKITS = ("12.4", "13.0")
# The threaded build on the 13.0 wheel's nvcc alone (as issue 72 measured it).
THREADED_TOOLKITS = ("13.0",)


ARCH_ARGS = [a for arch in ARCHS for a in ("--arch", arch)]
TOOLKIT_ARGS = [a for t in TOOLKITS for a in ("--toolkit", t)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("together-corpus")
    write_case(folder, "together", CASE, {"k.cu": KERNEL, "z.cu": KERNEL, "clean.cu": CLEAN})
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> dict[str, Run]:
    archs, every = ARCH_ARGS, TOOLKIT_ARGS
    threaded = [a for t in THREADED_TOOLKITS for a in ("--toolkit", t)]
    # No compile cache: the key of a cell is the same built together or apart (that is
    # the claim under test), so the second run would be served the first one's builds.
    return {how: cudamatrix("run", "--corpus", str(corpus), "--case", "together", *archs,
                            "--no-compile-cache", *extra,
                            out=tmp_path_factory.mktemp(f"together-{how}"))
            for how, extra in (
                ("together", every),
                # One job: its cells end in the order they start.
                ("apart", (*every, "--compile-apart", "--order", "reversed", "-j", "1")),
                ("threads", (*threaded, "--compile-strategy", "threads", "-j", "2")),
                ("grouped", (*threaded, "--compile-strategy", "grouped")))}


def _compile(cell: dict[str, object]) -> dict[str, object]:
    stages = cell["stages"]
    assert isinstance(stages, list)
    first: dict[str, object] = stages[0]
    return first


def test_every_cell_ran_in_each(runs: dict[str, Run]) -> None:
    for how, run in runs.items():
        assert run.code == 0, (how, run.output[-3000:])
        toolkits = THREADED_TOOLKITS if how in ("threads", "grouped") else TOOLKITS
        assert len(run.cells()) == VARIANTS * len(ARCHS) * len(toolkits), \
            (how, sorted(run.cells()))


def test_the_reversed_run_started_the_last_cell_first(runs: dict[str, Run],
                                                      corpus: Path) -> None:
    """--order reversed, one job: the apart run's cells ended, and so started, in the
    plan's order reversed (`cudamatrix list` prints the plan's order); its verdicts are
    the together run's (test_verdicts_warnings_and_figures_are_each_archs_own)."""
    ended = re.findall(r"^\[\d+/\d+\] (\S+):", runs["apart"].output, re.MULTILINE)
    planned = cudamatrix_in_process("list", "--corpus", str(corpus), "--case", "together",
                                    *TOOLKIT_ARGS, *ARCH_ARGS).output.split()
    assert len(planned) == VARIANTS * len(ARCHS) * len(TOOLKITS), planned
    # A worker takes the first cell whose toolkit is ready (orchestrator/prefetch.py), so
    # the toolkits' cells may interleave as their environments come; each toolkit's own
    # cells keep the reversed order.
    for toolkit in TOOLKITS:
        def of(cells: list[str], toolkit: str = toolkit) -> list[str]:
            return [c for c in cells if c.split("/")[2] == toolkit]
        assert of(ended) == of(planned)[::-1], (toolkit, ended, planned)
    assert sorted(ended) == sorted(planned)


def test_verdicts_warnings_and_figures_are_each_archs_own(runs: dict[str, Run]) -> None:
    apart = runs["apart"].cells()
    built_other_ways = [(how, cell_id, cell) for how in ("together", "threads", "grouped")
                        for cell_id, cell in runs[how].cells().items()]
    assert runs["together"].cells().keys() == apart.keys()
    for how, cell_id, cell in built_other_ways:
        alone = apart[cell_id]
        for key in ("outcome", "stage", "reached", "message", "expected"):
            assert cell[key] == alone[key], (how, cell_id, key, cell[key], alone[key])
        built, built_alone = _compile(cell)["details"], _compile(alone)["details"]
        assert isinstance(built, dict) and isinstance(built_alone, dict)
        for key in ("warnings", "resources", "ships"):
            assert built.get(key) == built_alone.get(key), (how, cell_id, key)
        warned = any("pre-Hopper path" in w for w in built.get("warnings", []))
        if cell["outcome"] == "pass" and "/clean/" not in cell_id:
            # The sm_80 build alone warns; its siblings never do (the clean kernel never).
            assert warned == cell_id.endswith("/sm_80"), (cell_id, built.get("warnings"))


def test_one_nvcc_built_each_group_that_builds(runs: dict[str, Run]) -> None:
    for cell_id, cell in runs["together"].cells().items():
        details = _compile(cell)["details"]
        assert isinstance(details, dict)
        arch = cell_id.split("/")[3]
        if "/guarded/" in cell_id:
            # sm_80's own step (its device preprocessing) failed: its cell, from the shared
            # build's log; the others were built together again without it.
            assert details["built_with"] == (list(ARCHS) if arch == "sm_80"
                                             else ["sm_90", "sm_90a"]), (cell_id, details)
        elif "/nvcc-speaks/" in cell_id:  # nvcc's own warning says not which arch it is of
            assert "built_with" not in details, cell_id
            assert "nvcc printed outside its steps" in details["built_alone"], details
        else:
            assert details["built_with"] == list(ARCHS), (cell_id, details)
    for cell_id, cell in runs["apart"].cells().items():
        assert "built_with" not in _compile(cell)["details"], cell_id


def test_each_library_ships_its_own_arch_only(runs: dict[str, Run]) -> None:
    """The shared build's library, pruned per cell, holds the same images as the cell's
    own build: its arch's SASS, nothing of its siblings'."""
    from cudamatrix.common.up_to_date import InputLedger
    from cudamatrix.config.plan import cell_slug
    from cudamatrix.providers.sass_tools import prepare_sass_tools
    from cudamatrix.stages.binaries.facts import read_modules

    cuobjdump = prepare_sass_tools(SHARED_CACHE, InputLedger())
    assert cuobjdump is not None
    for cell_id in runs["together"].cells():
        if "/library/" not in cell_id:
            continue
        shipped = {}
        for how, run in runs.items():
            if cell_id not in run.cells():  # the threaded and grouped runs: 13.0 alone
                continue
            library = run.out / "artifacts" / cell_slug(cell_id) / "libcase.so"
            assert library.is_file(), (how, cell_id)
            shipped[how] = [m.describe() for m in read_modules(library, library.name,
                                                               cuobjdump)]
        arch = cell_id.split("/")[3]
        assert all(images == shipped["apart"] for images in shipped.values()), (cell_id, shipped)
        assert shipped["together"] and all(d == f"SASS {arch}; PTX none"
                                           for d in shipped["together"]), shipped


@pytest.mark.gpu
@pytest.mark.skipif(not has_gpu(), reason="no GPU: the load and run stages need one")
def test_on_a_gpu_each_library_runs_its_own_arch_only(runs: dict[str, Run]) -> None:
    """A Hopper GPU runs the sm_90 and sm_90a libraries; the sm_80 one, built together
    with them, has no image it can load, as when built alone (bench/evidence/compile-together-h100
    holds this run on an H100)."""
    for how, run in runs.items():
        cells = run.cells()
        for arch in ARCHS:
            cell = cells[f"together/library/13.0/{arch}"]
            if arch == "sm_80":
                assert cell["outcome"] == "fail" and "status 209" in cell["message"], (how, cell)
            else:
                assert cell["outcome"] == "pass", (how, arch, cell["message"])


def test_the_cubin_is_the_sources_own_never_the_device_links(runs: dict[str, Run]) -> None:
    """nvcc -shared keeps two cubins, the source's (z.cubin) and the device link's
    (libcase_dlink.cubin); the first in name order was taken, which for a source named
    after "libcase" was the link's, with no kernel in it."""
    for how, run in runs.items():
        for cell_id, cell in run.cells().items():
            if "/late-name/" not in cell_id:
                continue
            ships = _compile(cell)["details"]["ships"]  # type: ignore[index]
            assert any(image["kind"] == "sass" and image["kernels"] for image in ships), \
                (how, cell_id, ships)


def test_each_strategy_says_how_it_compiled(runs: dict[str, Run]) -> None:
    """Threaded (-j 2): a kernel that prints nothing but ptxas's figures is split by arch,
    at most one thread per core; one that prints more (the sm_80 build's `#warning`) is
    built again one arch after another, saying why; a group one arch of which fails in its
    own step is built again without it, threaded or not. Grouped, no group is threaded."""
    for cell_id, cell in runs["threads"].cells().items():
        details = _compile(cell)["details"]
        assert isinstance(details, dict)
        arch = cell_id.split("/")[3]
        if "/clean/" in cell_id:
            assert details["compile_strategy"] == "threads", details
            assert details["nvcc_threads"] == 2, details  # at most the cores (-j 2)
        elif "/kernel/" in cell_id:
            assert details["compile_strategy"] == "grouped", details
            assert "more than ptxas's figures" in str(details["threads_fallback"]), details
            assert "pre-Hopper path" in str(details["threads_fallback"]), details
        elif "/guarded/" in cell_id:
            assert details["built_with"] == (list(ARCHS) if arch == "sm_80"
                                             else ["sm_90", "sm_90a"]), (cell_id, details)
    for cell_id, cell in runs["grouped"].cells().items():
        details = _compile(cell)["details"]
        assert isinstance(details, dict)
        assert "nvcc_threads" not in details and "threads_fallback" not in details, cell_id
