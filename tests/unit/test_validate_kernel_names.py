"""Issue 70, point 5: a case's kernel name that its source does not define passed
`validate` and failed at run, as a check failure. `validate` now warns, naming the kernels
the source defines (a warning: a kernel a macro makes is no name in the text)."""

from __future__ import annotations

from pathlib import Path

from conftest import cudamatrix_in_process
from cudamatrix.stages.inspect.kernel_names import kernels_defined, written_base


def _starter(tmp_path: Path, kernel: str) -> Path:
    made = cudamatrix_in_process("init", cwd=tmp_path)
    assert made.code == 0, made.output
    case = tmp_path / "cudamatrix-cases" / "saxpy" / "case.toml"
    case.write_text(case.read_text().replace('kernel = "saxpy"', f'kernel = "{kernel}"'))
    return case


def test_validate_warns_of_a_kernel_the_source_does_not_define(tmp_path: Path) -> None:
    case = _starter(tmp_path, "saxpi")
    said = cudamatrix_in_process("validate", cwd=tmp_path)
    assert said.code == 0, said.output
    warning = next(line for line in said.output.splitlines() if line.startswith("warning:"))
    assert "saxpy/nvrtc" in warning or str(case) in warning, warning
    assert "'saxpi'" in warning and "defines saxpy" in warning, warning


def test_validate_says_nothing_of_a_kernel_the_source_defines(tmp_path: Path) -> None:
    _starter(tmp_path, "void saxpy(float, const float*, float*, int)")
    said = cudamatrix_in_process("validate", cwd=tmp_path)
    assert said.code == 0 and "warning" not in said.output, said.output


def test_the_kernels_a_source_defines() -> None:
    source = """
    // __global__ void commented(int) {}
    /* __global__ void also_commented() {} */
    extern "C" __global__ void plain(float* x) {}
    template <int N> __global__ void __launch_bounds__(256, 2) bounded(float* x) {}
    namespace ns { static __global__ __launch_bounds__(128) void scale(float* x); }
    __global__ void
    on_two_lines(int n) {}
    void __device__ helper() {}
    const char* text = "__global__ void in_a_string() {}";
    """
    assert kernels_defined(source) == ["plain", "bounded", "scale", "on_two_lines"]
    assert kernels_defined('#define KERNEL(n) __global__ void n() {}\nKERNEL(k)') is None


def test_the_name_a_kernel_is_written_with() -> None:
    assert written_base("compute_gemm") == "compute_gemm"
    assert written_base("Marlin<256, 1, 8, 8, 4, -1>") == "Marlin"
    assert written_base("ns::scale") == "scale"
    assert written_base("void ns::f<(anonymous namespace)::X, 3>(int*)") == "f"
