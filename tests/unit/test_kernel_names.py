"""A kernel named as C++ names it, matched among a module's real mangled entries."""

from __future__ import annotations

import pytest

from cudamatrix.stages.inspect.kernel_names import KernelNotFound, cpp_name, demangle, resolve

# Entries as nvcc 13.0 and NVRTC name them (Marlin's from vLLM's marlin.cu).
ENTRIES = ["_Z12compute_gemmPK6__halfS1_PKfPfff",
           "_Z6MarlinILi256ELi1ELi8ELi8ELi4ELin1EEvPK4int4S2_PS0_S2_S2_iiiiPii",
           "_Z6MarlinILi128ELi1ELi8ELi8ELi4ELin1EEvPK4int4S2_PS0_S2_S2_iiiiPii",
           "saxpy", "_ZN2ns5plainEPf", "_Z4overPf", "_Z4overPi"]


@pytest.mark.parametrize(("written", "lowered"), [
    ("compute_gemm", ENTRIES[0]),
    ("Marlin<256, 1, 8, 8, 4, -1>", ENTRIES[1]),
    ("Marlin<128,1,8,8,4,-1>", ENTRIES[2]),  # spacing is not part of a name
    ("saxpy", "saxpy"),  # extern "C"
    ("ns::plain", ENTRIES[4]),
    ("plain", ENTRIES[4]),  # the unique base name
    ("over(int*)", ENTRIES[6]),
    ("over(float *)", ENTRIES[5]),
    ("_Z4overPi", ENTRIES[6]),  # mangled, as before
])
def test_resolves(written: str, lowered: str) -> None:
    assert resolve(written, ENTRIES).lowered == lowered


@pytest.mark.parametrize(("written", "words"), [
    ("Marlin", "'Marlin' names 2 kernels"),
    ("over", "'over' names 2 kernels"),
    ("gemm", "is not a kernel of the built module"),
])
def test_ambiguity_and_absence_list_the_demangled_kernels(written: str, words: str) -> None:
    with pytest.raises(KernelNotFound) as caught:
        resolve(written, ENTRIES)
    assert words in str(caught.value)
    assert "over(float*)" in str(caught.value) or "Marlin<256, 1, 8, 8, 4, -1>" in str(caught.value)


def test_names_as_authors_write_them() -> None:
    assert demangle(ENTRIES[0]).startswith("compute_gemm(__half const*")
    assert cpp_name(ENTRIES[1]) == "Marlin<256, 1, 8, 8, 4, -1>"
    assert cpp_name("saxpy") == "saxpy" and demangle("_Znot-a-name") == "_Znot-a-name"


def test_the_compilers_answer_is_read_off_the_probes_ptx() -> None:
    """kernel_probe: the variable that takes the name's address is initialised with the
    kernel's mangled name, as nvcc's and clang's PTX write it."""
    from cudamatrix.stages.compile.kernel_probe import probe_text, referenced

    assert probe_text("/c/k.cu", "ns::k<half, 8>") == (
        '#include "/c/k.cu"\n__device__ void* __cudamatrix_kernel_ref = (void*)&ns::k<half, 8>;\n')
    nvcc = ".global .align 8 .u64 __cudamatrix_kernel_ref = _ZN2ns1kI6__halfLj8EEEvPT_;\n"
    clang = ".visible .global .align 8 .u64 __cudamatrix_kernel_ref = generic(_Z1kPf);\n"
    assert referenced(nvcc) == "_ZN2ns1kI6__halfLj8EEEvPT_"
    assert referenced(clang) == "_Z1kPf"
    assert referenced(".visible .entry _Z1kPf(\n") is None


def test_a_module_no_compiler_of_the_run_built_matches_the_name_as_written() -> None:
    """Issue 38: for a prebuilt cubin or a build's library the names are matched as the
    demangler prints them, C++'s other spellings made one: CUDA's typedefs (`half` for
    `__half`), `8` for `8u`, a function as a template argument with or without its
    namespace, trailing arguments left to their defaults."""
    from cudamatrix.stages.inspect.kernel_names import KernelNotFound, resolve

    half = "_ZN3act11act_and_mulI6__halfXadL_ZNS_4siluERKfEELj8ELi4EEEvPT_PKS4_i"
    single = "_ZN3act11act_and_mulIfXadL_ZNS_4siluERKfEELj8ELi4EEEvPT_PKS3_i"
    entries = [half, single]
    for written in ("act::act_and_mul<half, act::silu, 8>", "act::act_and_mul<half, silu, 8>",
                    "act::act_and_mul<half, silu, 8u, 4>"):
        assert resolve(written, entries).lowered == half, written
    assert resolve("act::act_and_mul<float, silu, 8>", entries).lowered == single
    with pytest.raises(KernelNotFound, match="is not a kernel of the built module"):
        resolve("act::act_and_mul<double, silu, 8>", entries)
    with pytest.raises(KernelNotFound, match="is not a kernel of the built module"):
        resolve("act::act_and_mul<half, silu, 16>", entries)
