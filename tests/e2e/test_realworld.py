"""Real kernels nobody here wrote, as a new user would write them up: every verdict true.

The sources come from pinned PyPI packages at test time (tests/data/realworld/sources.toml:
numba-cuda's NVRTC sources, CUTLASS's CuTe tutorial, FlashInfer's headers, GPTQModel's
Marlin from its sdist), cached, never committed. The
expectations in tests/data/realworld/cases were each checked against what the compilers do;
a `fail`, `error` or `xpass` here is the tool's fault until shown otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import REPO, Run, cudamatrix

sys.path.insert(0, str(REPO / "tests" / "data" / "realworld"))
from fetch import fetch

TOOLKITS = ("11.8", "12.0", "12.4", "12.8", "13.0")
ARCHS = ("sm_70", "sm_75", "sm_80", "sm_90", "sm_90a")


# CuTe's SGEMM tutorial takes half a minute a cell (CUTLASS's headers through nvcc's host
# and device passes): it runs for sm_80, its own arch, where each toolkit's verdict
# differs (built, or no nvcc); on sm_90 and sm_90a it built just as on sm_80 (pass on each
# toolkit that has nvcc), which showed nothing sm_80 does not and cost 5 more compiles.
HEAVY = {"cute-sgemm-sm80": ("sm_80",)}
# FlashInfer's headers through nvcc, 4-6 s a cell: the archs its users build for most.
HEAVY.update({case: ("sm_80", "sm_90a") for case in ("flashinfer-rmsnorm",
                                                       "flashinfer-sampling",
                                                       "flashinfer-activation")})
# And over the CCCL releases from 13.0 on (its `only`), for the Hopper arch it targets.
HEAVY["flashinfer-rope"] = ("sm_90a",)
# GPTQModel's Marlin (its sdist), 2-8 s a cell: Turing, where it stops, and Ampere.
HEAVY["gptqmodel-marlin"] = ("sm_75", "sm_80")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("realworld-corpus")
    fetch(folder)
    return folder


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Run:
    shards = tmp_path_factory.mktemp("realworld-shards")
    cases = sorted(p.name for p in corpus.iterdir())
    for name, selected, archs in (
            ("light", [c for c in cases if c not in HEAVY], ARCHS),
            *((case, [case], HEAVY[case]) for case in cases if case in HEAVY)):
        args = ["run", "--tier", "nightly", "--corpus", str(corpus)]
        for case in selected:
            args += ["--case", case]
        for toolkit in TOOLKITS:
            args += ["--toolkit", toolkit]
        for arch in archs:
            args += ["--arch", arch]
        done = cudamatrix(*args, out=shards / name)
        assert done.code in (0, 1), done.output[-3000:]
    # One report of both runs, as CI's merge job makes one of its shards.
    out = tmp_path_factory.mktemp("realworld-out")
    return cudamatrix("merge", *(str(p) for p in sorted(shards.iterdir())), out=out)


def test_no_verdict_is_the_tools_fault(run: Run) -> None:
    cells = run.results["cells"]
    wrong = [(c["id"], c["outcome"], c["message"][:200]) for c in cells
             if c["outcome"] in ("fail", "error", "xpass")]
    assert not wrong, wrong
    assert run.code == 0, run.output[-3000:]
    kernels = {(c["case"], c["variant"]) for c in cells}
    assert len(kernels) >= 8, kernels
    ran = {c["toolkit"] for c in cells if c["outcome"] in ("pass", "xfail")}
    assert set(TOOLKITS) <= ran and len({t.split(".")[0] for t in ran}) == 3, ran


def test_every_skip_says_why_with_arch_and_toolkit(run: Run) -> None:
    for cell in run.results["cells"]:
        if cell["outcome"] != "skip":
            continue
        message = cell["message"]
        assert f"toolkit {cell['toolkit']}" in message, message
        assert (cell["arch"] in message or "ships no <" in message
                or "has no nvcc" in message), message


def test_real_verdicts(run: Run) -> None:
    cells = run.cells()
    # An expected compile error is quoted from the compiler, never from the logged command.
    error = cells["numba-error/nvrtc-rdc/12.4/sm_80"]
    assert error["outcome"] == "xfail"
    assert 'identifier "SYNTAX" is undefined' in error["message"]
    # CCCL reaches NVRTC on the wheel toolkits (it was missing for 11.x/12.x).
    assert cells["numba-cta-barrier/nvrtc-rdc/12.4/sm_80"]["outcome"] == "pass"
    assert cells["numba-runtime/nrt/12.8/sm_90a"]["outcome"] == "pass"
    packages = cells["numba-runtime/nrt/12.0/sm_80"]
    assert packages["outcome"] == "skip"
    assert "ships no <cuda/atomic>: not in nvidia-cuda-cccl-cu12 12.0" in packages["message"]
    # Relative include folders of a real case, resolved against the case.
    assert cells["numba-ffi/saxpy/13.0/sm_90a"]["outcome"] == "pass"
    # nvcc with CUTLASS 4.2.0's headers builds its own tutorial: 13.0's wheel nvcc, and
    # Debian's nvcc for 11.8 and 12.4; 12.8's wheels have none and it says so.
    for toolkit in ("11.8", "12.4", "13.0"):
        assert cells[f"cute-sgemm-sm80/nvcc/{toolkit}/sm_80/cutlass-4.2.0"]["outcome"] == "pass"
    nvcc_less = cells["cute-sgemm-sm80/nvcc/12.8/sm_80/cutlass-4.2.0"]
    assert nvcc_less["outcome"] == "skip" and "Debian packages nvcc" in nvcc_less["message"]


def test_marlin_from_its_sdist_stops_on_turing_only(run: Run) -> None:
    """Issue 61: GPTQModel 7.7.0's Marlin kernel, fetched from its PyPI sdist at test time:
    sm_75 fails on every toolkit with an nvcc (dequant() exists only from sm_80 on, and
    the kernel calls it on Turing), sm_80 builds; 12.0 and 12.8 have no nvcc and say so."""
    cells = run.cells()
    for toolkit in ("11.8", "12.4", "13.0"):
        turing = cells[f"gptqmodel-marlin/fp16-u8/{toolkit}/sm_75"]
        assert turing["outcome"] == "xfail", turing["message"]
        assert 'identifier "dequant" is undefined' in turing["message"]
        assert cells[f"gptqmodel-marlin/fp16-u8/{toolkit}/sm_80"]["outcome"] == "pass"
    for toolkit in ("12.0", "12.8"):
        assert "has no nvcc" in cells[f"gptqmodel-marlin/fp16-u8/{toolkit}/sm_80"]["message"]


def test_compiler_warnings_reach_the_cell_and_the_report(run: Run) -> None:
    cells = run.cells()
    deprecated = cells["numba-jitlink/nvrtc-rdc/12.8/sm_70"]
    assert deprecated["outcome"] == "pass"
    assert any("are deprecated" in w for w in deprecated["warnings"]), deprecated["warnings"]
    warned = cells["numba-warn/nvrtc-rdc/13.0/sm_80"]
    assert warned["outcome"] == "pass"
    assert any("#177-D" in w for w in warned["warnings"])
    markdown = (run.out / "COMPATIBILITY.md").read_text()
    assert "warning: " in markdown and "are deprecated" in markdown


def test_cutlass_kernels_named_the_cpp_way(run: Run) -> None:
    """CUTLASS's own util kernels, named as C++ names them: NVRTC instantiates the template
    from its name (float and cutlass::half_t), nvcc's module is searched by the plain
    name of a namespaced kernel. Each cell records the name the load and run stages use."""
    cells = run.cells()
    for toolkit in ("11.8", "12.4", "13.0"):
        half = cells[f"cutlass-nchw-to-nhwc/half/{toolkit}/sm_80"]
        assert half["outcome"] == "pass", half["message"]
        assert half["kernel"]["signature"] == ("void cutlass::nchw_to_nhwc_kernel<cutlass::"
                                               "half_t>(cutlass::half_t*, cutlass::half_t "
                                               "const*, int, int, int, int)"), half["kernel"]
    rmsnorm = cells["cutlass-rmsnorm/half8/13.0/sm_90a"]
    assert rmsnorm["outcome"] == "pass", rmsnorm["message"]
    assert rmsnorm["kernel"] == {
        "name": "rmsnorm_twoPassAlgo_e8",
        "lowered": "_ZN7cutlass22rmsnorm_twoPassAlgo_e8EP6float4PKS0_S3_iif",
        "signature": "cutlass::rmsnorm_twoPassAlgo_e8(float4*, float4 const*, float4 const*, "
                     "int, int, float)"}
    refused = cells["cutlass-rmsnorm/nvrtc-template/12.4/sm_80"]
    assert refused["outcome"] == "xfail" and 'source file "cfloat"' in refused["message"]


def test_a_real_kernel_that_spills_is_caught_by_its_machine_code_and_its_budget(
        run: Run) -> None:
    """nchw_to_nhwc_kernel<float> under 24 registers: NVRTC 11.8 fits it, 12.x and 13.0
    spill. The cubin check reads the SASS (STL/LDL) and the budget ptxas's figures; both
    tell the same toolkits apart, and the uncapped kernel keeps within its budget."""
    cells = run.cells()
    clean, spilled = cells["cutlass-nchw-to-nhwc/capped-sass/11.8/sm_80"], \
        cells["cutlass-nchw-to-nhwc/capped-sass/13.0/sm_80"]
    assert clean["outcome"] == "pass" and clean["resources"][0]["spill_store_bytes"] == 0
    assert spilled["outcome"] == "xfail" and spilled["stage"] == "inspect"
    assert "cubin contains" in spilled["message"]
    assert spilled["resources"][0]["spill_store_bytes"] > 0
    budget = cells["cutlass-nchw-to-nhwc/capped-budget/12.4/sm_90a"]
    assert budget["outcome"] == "xfail", budget["message"]
    assert budget["message"].startswith("cutlass::nchw_to_nhwc_kernel<float>: ")
    assert "(NVRTC 12.4, sm_90a)" in budget["message"]
    assert cells["cutlass-nchw-to-nhwc/capped-budget/11.8/sm_75"]["outcome"] == "pass"
    assert cells["cutlass-nchw-to-nhwc/float/13.0/sm_90a"]["outcome"] == "pass"
    markdown = (run.out / "COMPATIBILITY.md").read_text()
    assert "| `capped-budget` | 13.0 | cutlass::nchw_to_nhwc_kernel&lt;float&gt; |" in markdown


def test_a_real_library_finds_every_header_of_its_release(run: Run) -> None:
    """Issue 37: FlashInfer's norm.cuh includes <cublasLt.h> and <cublas_v2.h>, its
    sampling.cuh <curand_kernel.h>; a toolkit of compiler wheels alone failed both on every
    release (`cublasLt.h: No such file or directory`). Now what stops them is what a full
    install of the release says: CCCL too old for sampling.cuh on 11.8 and 12.4."""
    cells = run.cells()
    for toolkit in ("11.8", "12.4", "13.0"):
        for arch in ("sm_80", "sm_90a") if toolkit != "11.8" else ("sm_80",):  # sm_90a: 12.0
            norm = cells[f"flashinfer-rmsnorm/nvcc/{toolkit}/{arch}"]
            assert norm["outcome"] == "pass", (toolkit, arch, norm["message"])
            sampling = cells[f"flashinfer-sampling/nvcc/{toolkit}/{arch}"]
            if toolkit == "13.0":
                assert sampling["outcome"] == "pass", (arch, sampling["message"])
            else:
                assert sampling["outcome"] == "xfail", (toolkit, sampling["message"])
                assert "curand" not in sampling["message"].lower(), sampling["message"]
    # Issue 71: named with the first CCCL release that has what it lacks, read off the
    # CCCL wheels' headers (12.0-12.2's lack libcu++'s public headers and cannot say).
    diagnosis = cells["flashinfer-sampling/nvcc/11.8/sm_80"]["diagnosis"]
    assert diagnosis["rule"] == "cccl-from-release", diagnosis
    assert diagnosis["title"] \
        == "<cuda/functional> is in CCCL from 12.3.101.post1 on (toolkit 12.3)"
    diagnosis = cells["flashinfer-sampling/nvcc/12.4/sm_80"]["diagnosis"]
    assert diagnosis["title"] == "cuda::maximum is in CCCL from 12.9.27 on (toolkit 12.9)"


def test_the_cccl_release_a_real_kernel_needs(run: Run) -> None:
    """Issue 37: FlashInfer's RoPE header needs a newer CCCL than CUDA 12.4's or 13.0's.
    With each CCCL release ahead of the toolkit's own (`libraries = ["cccl"]`), nvcc 12.4
    and 13.0 build it from CCCL 13.1 on."""
    cells = run.cells()
    for toolkit in ("12.4", "13.0"):
        own = cells[f"flashinfer-rope/own-cccl/{toolkit}/sm_90a"]
        assert own["outcome"] == "xfail", (toolkit, own["message"])
    for toolkit in ("12.4", "13.0"):
        assert cells[f"flashinfer-rope/cccl/{toolkit}/sm_90a/cccl-13.0.85"]["outcome"] == "xfail"
        for cccl in ("13.1.115", "13.2.86", "13.3.5.0.6"):
            cell = cells[f"flashinfer-rope/cccl/{toolkit}/sm_90a/cccl-{cccl}"]
            assert cell["outcome"] == "pass", (toolkit, cccl, cell["message"])
            assert cell["versions"]["nvidia-cuda-cccl (headers)"] == cccl
    # No sm_90a in 11.8: each such cell a skip saying so (issue 48), never dropped.
    for cell_id, cell in cells.items():
        if cell_id.startswith("flashinfer-rope/cccl/11.8/"):
            assert cell["outcome"] == "skip" and "sm_90a first came with CUDA 12.0" in \
                cell["message"], (cell_id, cell["message"])


def test_bisect_names_the_first_cccl_that_builds_it(corpus: Path, tmp_path: Path) -> None:
    """`bisect --over library:cccl` between two releases, over every release the index has:
    the first one that builds FlashInfer's RoPE header with nvcc 13.0."""
    done = cudamatrix("bisect", "--over", "library:cccl", "--from", "13.0.85", "--to",
                      "13.3.5.0.6", "--corpus", str(corpus), "--case", "flashinfer-rope",
                      "--variant", "cccl", "--toolkit", "13.0", "--arch", "sm_90a", "--no-gpu",
                      out=tmp_path / "bisect")
    assert done.code == 0, done.output[-3000:]
    assert "library:cccl 13.1.78: fails at compile -> builds" in done.output, done.output[-3000:]


def test_flashinfer_kernels_named_as_their_source_names_them(run: Run) -> None:
    """Issue 38: `act_and_mul_kernel<half, silu, 8>` and `RMSNormKernel<8, half>`, as the
    explicit instantiations write them, were 'not a kernel of the built module' (which holds
    <__half, &silu, 8u> and <8u, __half>); nvcc now resolves each name itself."""
    cells = run.cells()
    for toolkit in ("11.8", "12.4", "13.0"):
        act = cells[f"flashinfer-activation/nvcc/{toolkit}/sm_80"]
        assert act["outcome"] == "pass", (toolkit, act["message"])
        assert act["kernel"]["signature"].startswith(
            "void flashinfer::activation::act_and_mul_kernel<__half, &(silu(float const&)), 8u>")
        norm = cells[f"flashinfer-rmsnorm/nvcc/{toolkit}/sm_80"]
        assert norm["kernel"]["signature"].startswith(
            "void flashinfer::norm::RMSNormKernel<8u, __half>"), norm["kernel"]
