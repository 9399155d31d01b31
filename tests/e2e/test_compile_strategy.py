"""Whichever way a group of cells that differ only in arch is compiled (issue 72: one nvcc
one arch after another, one nvcc with --threads, one nvcc per arch, or chosen from the
cores), every cell's verdict, warnings, figures and shipped images are its arch's own.

Four real runs of the same nine cells on the 13.0 wheel's nvcc (sm_75, sm_80, sm_90), no
compile cache: a kernel that prints nothing but ptxas's figures (its threaded output is
split by arch), one with sm_80's own warning and one sm_75 cannot build (their threaded
output cannot say whose a line is, so each group is built again one arch after another,
and says why).
"""

from __future__ import annotations

import pytest

from conftest import Run, cudamatrix, write_case

CLEAN = """\
__global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = sinf(x[i]) * 2.0f;
}
"""
WARNS = """\
__global__ void scale(float *x, int n) {
#if __CUDA_ARCH__ == 800
    int unused_on_sm_80;
#endif
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
"""
FAILS = """\
__global__ void total(int *x) {
    x[threadIdx.x] = __reduce_add_sync(0xffffffffu, x[threadIdx.x]);
}
"""
CASE = """\
title = "one group, every strategy"

[[variant]]
name = "clean"
source = "clean.cu"
frontend = "nvcc"
kernel = "scale"

[[variant]]
name = "warns"
source = "warns.cu"
frontend = "nvcc"
kernel = "scale"

[[variant]]
name = "fails"
source = "fails.cu"
frontend = "nvcc"
kernel = "total"
  [[variant.expect]]
  when = { arch = "sm_75" }
  outcome = "fail"
  stage = "compile"
  match = "__reduce_add_sync"
"""
ARCHS = ("sm_75", "sm_80", "sm_90")
STRATEGIES = ("grouped", "threads", "apart", "auto")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    corpus = tmp_path_factory.mktemp("strategy-corpus")
    write_case(corpus, "strategy", CASE, {"clean.cu": CLEAN, "warns.cu": WARNS,
                                          "fails.cu": FAILS})
    axes = ["--toolkit", "13.0", *(a for arch in ARCHS for a in ("--arch", arch))]
    # No compile cache: a cell's key is the same however it was built (the claim under
    # test), so a second run would be served the first one's builds.
    return {how: cudamatrix("run", "--corpus", str(corpus), "--case", "strategy", *axes,
                            "--no-compile-cache", "--compile-strategy", how, "-j", "2",
                            out=tmp_path_factory.mktemp(f"strategy-{how}"))
            for how in STRATEGIES}


def _details(cell: dict[str, object]) -> dict[str, object]:
    stages = cell["stages"]
    assert isinstance(stages, list)
    details: dict[str, object] = stages[0]["details"]
    return details


def test_every_cell_has_one_verdict_whatever_compiled_it(runs: dict[str, Run]) -> None:
    apart = runs["apart"].cells()
    assert len(apart) == 3 * len(ARCHS), sorted(apart)
    for how, run in runs.items():
        assert run.code == 0, (how, run.output[-3000:])
        cells = run.cells()
        assert cells.keys() == apart.keys(), how
        for cell_id, cell in cells.items():
            alone = apart[cell_id]
            for key in ("outcome", "stage", "reached", "message", "expected"):
                assert cell[key] == alone[key], (how, cell_id, key, cell[key], alone[key])
            if cell["outcome"] == "pass":
                built, own = _details(cell), _details(alone)
                for key in ("warnings", "resources", "ships"):
                    assert built.get(key) == own.get(key), (how, cell_id, key)
    warned = {c for c, cell in apart.items() if _details(cell).get("warnings")}
    assert warned == {"strategy/warns/13.0/sm_80"}, warned
    failed = {c for c, cell in apart.items() if cell["outcome"] != "pass"}
    assert failed == {"strategy/fails/13.0/sm_75"}, failed


def test_each_strategy_says_how_it_compiled(runs: dict[str, Run]) -> None:
    for cell_id, cell in runs["threads"].cells().items():
        details = _details(cell)
        if "/clean/" in cell_id:  # nothing but ptxas's figures: split by arch
            assert details["compile_strategy"] == "threads", details
            assert details["nvcc_threads"] == 2  # at most the cores (-j 2)
        elif "/warns/" in cell_id:
            assert details["compile_strategy"] == "grouped", details
            assert "more than ptxas's figures" in str(details["threads_fallback"])
            assert "unused_on_sm_80" in str(details["threads_fallback"])
        elif cell_id.endswith("/sm_75"):  # its own failure, from the serial build's log
            assert details.get("built_with") == list(ARCHS), details
        else:  # built again without sm_75: a group of two, no threads fallback needed
            assert details["built_with"] == ["sm_80", "sm_90"], details
    for cell_id, cell in runs["grouped"].cells().items():
        details = _details(cell)
        assert "nvcc_threads" not in details and "threads_fallback" not in details, cell_id
    for cell_id, cell in runs["apart"].cells().items():
        assert "built_with" not in _details(cell), cell_id
