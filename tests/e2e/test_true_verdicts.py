"""Each verdict comes from what the compiler did, on the build the user's library makes.

Every test here reproduces one way the tool once gave a wrong verdict on real code
(issue 10): it fails on the code before the fix and passes after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import Run, cudamatrix, write_case

SPILLER = """\
extern "C" __global__ void spill(float *x) {
    float a[64];
    for (int i = 0; i < 64; i++) a[i] = x[i * threadIdx.x];
    float s = 0;
    for (int i = 0; i < 64; i++) s += a[(i * 7 + threadIdx.x) % 64] * a[i];
    x[threadIdx.x] = s;
}
"""


def _run(corpus: Path, out: Path, *args: str) -> Run:
    return cudamatrix("run", "--corpus", str(corpus), *args, out=out)


def _cell(run: Run, cell_id: str) -> dict[str, Any]:
    cells = run.cells()
    assert cell_id in cells, (sorted(cells), run.output[-2000:])
    return cells[cell_id]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("truth-corpus")
    write_case(root, "regs", """
        title = "--maxrregcount reaches NVRTC's code generator"
        [[variant]]
        name = "capped"
        source = "spill.cu"
        frontend = "nvrtc"
        flags = ["--maxrregcount=32"]
        kernel = "spill"
        [[variant]]
        name = "no-local-memory"
        source = "spill.cu"
        frontend = "nvrtc"
        flags = ["--maxrregcount=32"]
          [[variant.artifact]]
          in = "sass"
          lacks = 'STL|LDL'
          [[variant.expect]]
          outcome = "fail"
          stage = "inspect"
          match = "sass contains"
        """, {"spill.cu": SPILLER})
    write_case(root, "relative-include", """
        title = "relative include folders are the case's own"
        [[variant]]
        name = "inc"
        source = "k.cu"
        frontend = "nvrtc"
        flags = ["-Iinc", "--include-path=more", "-I{toolkit_include}"]
        """, {"k.cu": '#include "value.h"\n#include "other.h"\n#include <cuda_fp16.h>\n'
                      'extern "C" __global__ void k(float *x) { x[0] = VALUE + OTHER; }\n',
              "inc/value.h": "#define VALUE 1.0f\n", "more/other.h": "#define OTHER 2.0f\n"})
    write_case(root, "warning-words", """
        title = "a warning that names an unknown arch decides nothing"
        [[variant]]
        name = "real-error"
        source = "w.cu"
        frontend = "nvrtc"
        [[variant]]
        name = "warning-only-match"
        source = "ok.cu"
        frontend = "nvrtc"
        flags = ["-DBREAK"]
          [[variant.expect]]
          outcome = "fail"
          stage = "compile"
          match = "Unsupported gpu architecture"
        """, {"w.cu": '#warning "Unsupported gpu architecture in this build"\n'
                      'extern "C" __global__ void k(float *x) { x[0] = undefined_name; }\n',
              "ok.cu": '#warning "Unsupported gpu architecture in this build"\n'
                       '#ifdef BREAK\n#error "this kernel is broken on purpose"\n#endif\n'
                       'extern "C" __global__ void k(float *x) { x[0] = 1.0f; }\n'})
    write_case(root, "latin1", """
        title = "sources are bytes: a Latin-1 comment is no error"
        [[variant]]
        name = "valid"
        source = "ok.cu"
        frontend = "nvrtc"
        [[variant]]
        name = "expected-failure"
        source = "bad.cu"
        frontend = "nvrtc"
          [[variant.expect]]
          outcome = "fail"
          stage = "compile"
          match = "undefined_caf"
        """, {"ok.cu": b'// r\xe9sum\xe9 of the caf\xe9 kernel\n'
                       b'extern "C" __global__ void k(float *x) { x[0] = 1.0f; }\n',
              "bad.cu": b'extern "C" __global__ void k(float *x) { x[0] = undefined_caf; }'
                        b' // caf\xe9\n'})
    write_case(root, "kernel-name", """
        title = "a kernel is named as C++ names it; one the module lacks is the case's mistake"
        [[variant]]
        name = "cpp"
        source = "k.cu"
        frontend = "nvrtc"
        kernel = "scale"
        [[variant]]
        name = "missing"
        source = "k.cu"
        frontend = "nvrtc"
        kernel = "scal"
        """, {"k.cu": "__global__ void scale(float *x) { x[0] *= 2.0f; }\n"})
    return root


@pytest.fixture(scope="module")
def run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    # Started from the repository, which has no inc/: relative paths are the case's.
    # No compile cache: a hit would replay the log of an earlier test's corpus folder.
    return _run(corpus, tmp_path_factory.mktemp("truth-out"), "--no-compile-cache",
                "--toolkit", "12.4",
                "--arch", "sm_80", "--case", "regs", "--case", "relative-include",
                "--case", "warning-words", "--case", "latin1", "--case", "kernel-name")


def test_options_reach_the_code_generator(run: Run) -> None:
    cell = _cell(run, "regs/capped/12.4/sm_80")
    assert cell["outcome"] == "pass", cell["message"]
    usage = cell["resources"][0]
    assert usage["registers"] == 32 and usage["spill_store_bytes"] > 0, usage
    assert "--maxrregcount=32" in cell["stages"][0]["log"]


def test_machine_code_checks_read_disassembled_sass(run: Run) -> None:
    cell = _cell(run, "regs/no-local-memory/12.4/sm_80")
    assert cell["outcome"] == "xfail", cell["message"]
    assert cell["stage"] == "inspect"
    assert "sass contains" in cell["message"] and "STL|LDL" in cell["message"]


def test_relative_includes_are_the_cases_own_and_logged(run: Run, corpus: Path) -> None:
    cell = _cell(run, "relative-include/inc/12.4/sm_80")
    assert cell["outcome"] == "pass", cell["message"]
    log = cell["stages"][0]["log"]
    assert f"-I{corpus / 'relative-include' / 'inc'}" in log
    assert f"--include-path={corpus / 'relative-include' / 'more'}" in log
    # The line as it ran, every path the machine's own: it compiles again in a shell.
    assert "/nvidia/cuda_runtime/include" in log and "{toolkit_root}" not in log


def test_a_warning_never_turns_a_failure_into_a_skip(run: Run) -> None:
    cell = _cell(run, "warning-words/real-error/12.4/sm_80")
    assert cell["outcome"] == "fail", cell
    assert "undefined_name" in cell["message"]


def test_match_looks_at_errors_not_warnings(run: Run) -> None:
    cell = _cell(run, "warning-words/warning-only-match/12.4/sm_80")
    assert cell["outcome"] == "fail", cell
    assert "broken on purpose" in cell["message"]
    assert "the failure said something else" in cell["reason"]


def test_sources_and_logs_are_bytes(run: Run) -> None:
    assert _cell(run, "latin1/valid/12.4/sm_80")["outcome"] == "pass"
    failed = _cell(run, "latin1/expected-failure/12.4/sm_80")
    assert failed["outcome"] == "xfail", failed["message"]
    assert failed["reason"].startswith("failed as expected")


def test_a_cpp_kernel_name_is_found_and_a_wrong_one_is_caught_at_build_time(run: Run) -> None:
    found = _cell(run, "kernel-name/cpp/12.4/sm_80")
    assert found["outcome"] == "pass", found["message"]
    assert found["kernel"] == {"name": "scale", "lowered": "_Z5scalePf",
                               "signature": "scale(float*)"}
    cell = _cell(run, "kernel-name/missing/12.4/sm_80")
    assert cell["outcome"] == "error" and cell["stage"] == "inspect", cell
    assert "kernel 'scal' is not a kernel of the built module" in cell["message"]
    assert "its kernels: scale(float*)" in cell["message"]
    assert 'identifier "scal" is undefined' in cell["message"]  # NVRTC's own words
    assert run.code == 1


def test_impossible_library_cells_are_pruned_with_the_reason(tmp_path: Path) -> None:
    run = cudamatrix("run", "--tier", "nightly", "--case", "wmma-jitify", "--toolkit", "12.4",
                     "--toolkit", "13.0", "--arch", "sm_80", out=tmp_path)
    assert run.code == 0, run.output[-2000:]
    cupy = {(c["toolkit"], c["library_version"]): c for c in run.results["cells"]
            if c["library"] == "cupy"}
    # Issue 48: an impossible cell is kept, a skip with its reason, never dropped.
    impossible = cupy[("13.0", "13.0.0")]
    assert impossible["outcome"] == "skip", impossible
    assert "cupy-cuda13x starts at 13.6" in impossible["message"]
    assert all(c["outcome"] != "skip" or "ruled out" not in c["message"]
               for key, c in cupy.items() if key in {("13.0", "13.6.0"), ("13.0", "14.2.0")})
    assert "cupy 13.0.0 with toolkit 13.0: cupy-cuda13x starts at 13.6" in run.output
