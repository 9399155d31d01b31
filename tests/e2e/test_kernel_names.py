"""A kernel named as its source names it resolves on every frontend (issue 38): the
compiler says which kernel a C++ name means (NVRTC's name expressions; for nvcc and clang,
the address of the name taken in device code, kernel_probe.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_case

# A typedef (`half` for `__half`), a function as a template argument, an unsigned
# parameter written as `8` and a defaulted one: FlashInfer's act_and_mul_kernel's shape.
SOURCE = """#include <cuda_fp16.h>
namespace act {
__device__ __forceinline__ float silu(const float& x) { return x / (1.0f + __expf(-x)); }
template <typename T, float (*F)(const float&), unsigned V, int W = 4>
__global__ void act_and_mul(T* out, const T* in, int d) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < d) out[i] = (T)(F((float)in[i]) * (float)in[i + d] * V * W);
}
template __global__ void act_and_mul<half, silu, 8>(half*, const half*, int);
template __global__ void act_and_mul<float, silu, 8>(float*, const float*, int);
}
"""
WRITTEN = "act::act_and_mul<half, act::silu, 8>"
# What every compiler lowers it to: act::act_and_mul<__half, &act::silu, 8u, 4>.
LOWERED = "_ZN3act11act_and_mulI6__halfXadL_ZNS_4siluERKfEELj8ELi4EEEvPT_PKS4_i"
CASE = """title = "a kernel named as C++ writes it"
{variants}
"""
VARIANT = """[[variant]]
name = "{frontend}-{tag}"
source = "k.cu"
frontend = "{frontend}"
flags = ["-std=c++17"]
kernel = "{kernel}"
"""


def _variants(frontends: tuple[str, ...]) -> str:
    out = []
    for frontend in frontends:
        out.append(VARIANT.format(frontend=frontend, tag="typedef", kernel=WRITTEN))
        out.append(VARIANT.format(frontend=frontend, tag="unknown", kernel="act::nope<half>"))
        out.append(VARIANT.format(frontend=frontend, tag="not-built",
                                  kernel="act::act_and_mul<double, act::silu, 8>"))
    return "\n".join(out)


@pytest.mark.parametrize(("toolkit", "frontends"), [
    ("13.0", ("nvcc", "nvrtc")),
    ("12.4", ("nvcc", "nvrtc", "clang")),
])
def test_a_cpp_name_resolves_on_every_frontend(run_cli, tmp_path: Path, toolkit: str,
                                               frontends: tuple[str, ...]) -> None:
    cases = tmp_path / "cases"
    write_case(cases, "names", CASE.format(variants=_variants(frontends)), {"k.cu": SOURCE})
    run = run_cli("run", "--corpus", str(cases), "--case", "names", "--toolkit", toolkit,
                  "--arch", "sm_80", "--no-gpu", out=tmp_path / "out")
    cells = run.cells()
    assert len(cells) == 3 * len(frontends), sorted(cells)
    for frontend in frontends:
        named = cells[f"names/{frontend}-typedef/{toolkit}/sm_80"]
        assert named["outcome"] == "pass", (frontend, named["message"])
        assert named["kernel"]["name"] == WRITTEN
        assert named["kernel"]["lowered"] == LOWERED
        assert "__half" in named["kernel"]["signature"]
        unknown = cells[f"names/{frontend}-unknown/{toolkit}/sm_80"]
        assert unknown["outcome"] == "error", (frontend, unknown["message"])
        # The compiler's own words on the name, quoted.
        assert "case error" in unknown["message"], unknown["message"]
        assert 'has no member "nope"' in unknown["message"] \
            or "no member named 'nope'" in unknown["message"], unknown["message"]
        # A name C++ would instantiate on the spot: NVRTC does (a name expression, as CuPy
        # uses it); a module nvcc or clang built without it has no such kernel.
        not_built = cells[f"names/{frontend}-not-built/{toolkit}/sm_80"]
        if frontend == "nvrtc":
            assert not_built["outcome"] == "pass", not_built["message"]
            assert "double" in not_built["kernel"]["signature"]
        else:
            assert not_built["outcome"] == "error", (frontend, not_built["message"])
            assert "is not a kernel of the built module" in not_built["message"]
    assert run.code == 1, run.output[-2000:]  # the case errors are the case's to fix
