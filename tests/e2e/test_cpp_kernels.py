"""Kernels named as C++ names them, machine-code checks that can fail, resource budgets.

Real compilers each time (NVRTC 12.4 and 13.0, the 13.0 wheel's nvcc, cuobjdump for the
SASS): each verdict below is what the compiler did. Before this, every C++ name was a
case error, `in = "cubin"` searched raw bytes (so `lacks = 'STL|LDL'` could never fail),
and ptxas's register and spill figures were recorded and used for nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Run, cudamatrix, write_case

KERNELS = """\
namespace ns {
template <int N, typename T>
__global__ void scale(T *x) { x[threadIdx.x] *= N; }
}
__global__ void plain(float *x) { x[threadIdx.x] += 1.0f; }
__global__ void over(float *x) { x[0] = 1.0f; }
__global__ void over(int *x) { x[0] = 1; }
template __global__ void ns::scale<2, float>(float *);
"""

# A real register-hungry kernel: 64 floats indexed by a run-time value. With 32 registers
# ptxas must spill it (STL/LDL in its SASS); unconstrained it does not.
SPILLER = """\
__global__ void spill(float *x) {
    float a[64];
    for (int i = 0; i < 64; i++) a[i] = x[i * threadIdx.x];
    float s = 0;
    for (int i = 0; i < 64; i++) s += a[(i * 7 + threadIdx.x) % 64] * a[i];
    x[threadIdx.x] = s;
}
"""

ASSERTS = """\
#include <cassert>
__global__ void checked(float *x) { assert(x[threadIdx.x] >= 0.0f && "input is negative"); }
"""


def _variant(name: str, source: str, frontend: str, extra: str = "") -> str:
    return (f'[[variant]]\nname = "{name}"\nsource = "{source}"\nfrontend = "{frontend}"\n'
            f"{extra}\n")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cpp-corpus")
    names = "".join(
        _variant(f"{frontend}-{label}", "k.cu", frontend, f'kernel = "{kernel}"')
        for frontend in ("nvrtc", "nvcc")
        for label, kernel in (("plain", "plain"), ("qualified", "ns::scale<2, float>"),
                              ("base", "scale"), ("overloaded", "over"),
                              ("signature", "over(int*)")))
    # NVRTC instantiates a template the source never instantiates, from its name.
    names += _variant("nvrtc-instantiated", "k.cu", "nvrtc", 'kernel = "ns::scale<7, double>"')
    write_case(root, "names", f'title = "C++ kernel names"\n{names}', {"k.cu": KERNELS})
    checks = "".join((
        _variant("cubin-spills", "spill.cu", "nvrtc", 'flags = ["--maxrregcount=32"]\n'
                 '  [[variant.artifact]]\n  in = "cubin"\n  lacks = "STL|LDL"\n'),
        _variant("cubin-clean", "k.cu", "nvrtc",
                 '  [[variant.artifact]]\n  in = "cubin"\n  lacks = "STL|LDL"\n'),
        _variant("ptx-no-fma", "spill.cu", "nvrtc", 'flags = ["--fmad=false"]\n'
                 '  [[variant.artifact]]\n  in = "ptx"\n  contains = "fma\\\\.rn"\n'),
        _variant("strings-message", "assert.cu", "nvcc",
                 '  [[variant.artifact]]\n  in = "strings"\n  contains = "input is negative"\n'),
        _variant("strings-absent", "assert.cu", "nvcc", 'flags = ["-DNDEBUG"]\n'
                 '  [[variant.artifact]]\n  in = "strings"\n  contains = "input is negative"\n'),
    ))
    write_case(root, "checks", f'title = "checks that can fail"\n{checks}',
               {"spill.cu": SPILLER, "assert.cu": ASSERTS, "k.cu": KERNELS})
    budgets = "".join((
        _variant("spills", "spill.cu", "nvrtc", 'flags = ["--maxrregcount=32"]\n'
                 '  [variant.resources]\n  max_spill_stores = 0\n'),
        _variant("spills-expected", "spill.cu", "nvrtc", 'flags = ["--maxrregcount=32"]\n'
                 '  [variant.resources]\n  max_spill_stores = 0\n'
                 '  [[variant.expect]]\n  outcome = "fail"\n  stage = "inspect"\n'
                 '  match = "spill"\n'),
        _variant("within", "spill.cu", "nvcc", '  [variant.resources]\n  kernel = "spill"\n'
                 "  max_registers = 255\n  max_spill_stores = 0\n  max_spill_loads = 0\n"),
        _variant("named-kernel", "k.cu", "nvcc", '  [variant.resources]\n'
                 '  kernel = "ns::scale<2, float>"\n  max_registers = 1\n'),
    ))
    write_case(root, "budgets", f'title = "resource budgets"\n{budgets}',
               {"spill.cu": SPILLER, "k.cu": KERNELS})
    return root


@pytest.fixture(scope="module")
def run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return cudamatrix("run", "--corpus", str(corpus), "--case", "names", "--case", "checks",
                      "--case", "budgets", "--toolkit", "13.0", "--arch", "sm_80",
                      out=tmp_path_factory.mktemp("cpp-out"))


def _cell(run: Run, case: str, variant: str) -> dict[str, object]:
    cells = run.cells()
    cell_id = f"{case}/{variant}/13.0/sm_80"
    assert cell_id in cells, (sorted(cells), run.output[-2000:])
    return cells[cell_id]


@pytest.mark.parametrize("frontend", ["nvrtc", "nvcc"])
@pytest.mark.parametrize(("label", "lowered", "signature"), [
    ("plain", "_Z5plainPf", "plain(float*)"),
    ("qualified", "_ZN2ns5scaleILi2EfEEvPT0_", "void ns::scale<2, float>(float*)"),
    ("signature", "_Z4overPi", "over(int*)"),
])
def test_a_kernel_is_found_by_its_cpp_name(run: Run, frontend: str, label: str, lowered: str,
                                            signature: str) -> None:
    cell = _cell(run, "names", f"{frontend}-{label}")
    assert cell["outcome"] == "pass", cell["message"]
    assert cell["kernel"] == {"name": dict(plain="plain", qualified="ns::scale<2, float>",
                                           signature="over(int*)")[label],
                              "lowered": lowered, "signature": signature}


@pytest.mark.parametrize("frontend", ["nvrtc", "nvcc"])
def test_the_unique_base_name_of_an_instantiated_template(run: Run, frontend: str) -> None:
    # NVRTC refuses `scale` as a name expression; the module's one instantiation is it.
    cell = _cell(run, "names", f"{frontend}-base")
    assert cell["outcome"] == "pass", cell["message"]
    assert cell["kernel"]["lowered"] == "_ZN2ns5scaleILi2EfEEvPT0_"  # type: ignore[index]


def test_nvrtc_instantiates_the_template_it_is_named_by(run: Run) -> None:
    cell = _cell(run, "names", "nvrtc-instantiated")
    assert cell["outcome"] == "pass", cell["message"]
    assert cell["kernel"]["signature"] == "void ns::scale<7, double>(double*)"  # type: ignore[index]


def test_an_ambiguous_name_lists_the_candidates(run: Run) -> None:
    nvcc = _cell(run, "names", "nvcc-overloaded")
    assert nvcc["outcome"] == "error" and nvcc["stage"] == "inspect"
    assert "'over' names 2 kernels" in nvcc["message"]
    assert "over(float*)" in nvcc["message"] and "over(int*)" in nvcc["message"]
    # The same list from NVRTC, with NVRTC's own refusal of the name expression.
    cell = _cell(run, "names", "nvrtc-overloaded")
    assert cell["outcome"] == "error" and cell["stage"] == "inspect", cell["message"]
    assert "'over' names 2 kernels" in cell["message"]
    assert "cannot determine which instance of overloaded function" in cell["message"]


def test_a_cubin_check_reads_machine_code_and_fails_truthfully(run: Run) -> None:
    spilled = _cell(run, "checks", "cubin-spills")
    assert spilled["outcome"] == "fail" and spilled["stage"] == "inspect", spilled["message"]
    assert "cubin contains" in spilled["message"] and "STL|LDL" in spilled["message"]
    assert spilled["resources"][0]["spill_store_bytes"] > 0  # type: ignore[index]
    clean = _cell(run, "checks", "cubin-clean")  # no local memory at all
    assert clean["outcome"] == "pass", clean["message"]


def test_a_ptx_check_fails_when_the_instruction_is_absent(run: Run) -> None:
    cell = _cell(run, "checks", "ptx-no-fma")
    assert cell["outcome"] == "fail" and cell["stage"] == "inspect", cell["message"]
    assert "ptx lacks /fma\\.rn/" in cell["message"]


def test_a_strings_check_finds_embedded_text_and_fails_without_it(run: Run) -> None:
    assert _cell(run, "checks", "strings-message")["outcome"] == "pass"
    absent = _cell(run, "checks", "strings-absent")  # -DNDEBUG: no assert, no message
    assert absent["outcome"] == "fail" and "strings lacks" in absent["message"]


def test_a_budget_judges_spills_both_ways(run: Run) -> None:
    broken = _cell(run, "budgets", "spills")
    assert broken["outcome"] == "fail" and broken["stage"] == "inspect", broken["message"]
    message = str(broken["message"])
    assert message.startswith("spill: ") and "bytes of spill stores > max_spill_stores 0" \
        in message and "(NVRTC 13.0, sm_80)" in message, message
    assert _cell(run, "budgets", "spills-expected")["outcome"] == "xfail"
    within = _cell(run, "budgets", "within")
    assert within["outcome"] == "pass", within["message"]


def test_a_budget_for_one_named_kernel(run: Run) -> None:
    cell = _cell(run, "budgets", "named-kernel")
    assert cell["outcome"] == "fail", cell["message"]
    assert str(cell["message"]).startswith("ns::scale<2, float>: ")
    assert "registers > max_registers 1 (nvcc 13.0" in str(cell["message"])


def test_a_kernel_that_starts_to_spill_is_a_finding_against_the_baseline(
        tmp_path: Path) -> None:
    """The same cell, built once unconstrained and once with 32 registers (as a toolkit
    upgrade or a flag change would): its outcome stays `pass`, and the run says the kernel
    now spills, in results.json, COMPATIBILITY.md and a GitHub warning annotation."""
    def case(flags: str) -> None:
        folder = tmp_path / "c" / "budget"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "case.toml").write_text(
            'title = "t"\n' + _variant("v", "spill.cu", "nvrtc", f"flags = [{flags}]"))
        (folder / "spill.cu").write_text(SPILLER)

    args = ("run", "--corpus", str(tmp_path / "c"), "--toolkit", "13.0", "--arch", "sm_80")
    case('"--maxrregcount=128"')
    before = cudamatrix(*args, out=tmp_path / "before")
    assert before.code == 0, before.output[-2000:]
    assert before.results["cells"][0]["resources"][0]["spill_store_bytes"] == 0
    case('"--maxrregcount=32"')
    summary = tmp_path / "summary.md"
    after = cudamatrix(*args, "--baseline", str(tmp_path / "before" / "results.json"),
                       out=tmp_path / "after",
                       env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert after.code == 0, after.output[-2000:]  # no new failure: a finding, not a failure
    changes = after.results["baseline"]["resources"]
    assert [(c["kernel"], c["what"]) for c in changes] == [("spill", "spill")], changes
    assert changes[0]["after"] > 0
    markdown = (tmp_path / "after" / "COMPATIBILITY.md").read_text()
    assert "📈 Resources: 1" in markdown and "spill starts to spill" in markdown
    assert "::warning title=budget/v/13.0/sm_80%3A resources::spill starts to spill" \
        in after.output, after.output[-2000:]
    assert "1 resource changes" in after.output


def test_the_report_tables_each_kernels_resources_by_its_cpp_name(run: Run) -> None:
    markdown = (run.out / "COMPATIBILITY.md").read_text()
    section = markdown[markdown.index("<strong>budgets</strong>"):]
    section = section[section.index("#### Kernel resources"):]
    rows = {line.split(" | ")[0].strip("| `"): line for line in section.splitlines()
            if line.startswith("| `")}
    assert "B spill" in rows["spills"] and "32 reg" in rows["spills"], rows
    assert "spill" not in rows["within"].split(" | ")[-1], rows
    overloads = markdown[markdown.index("<strong>names</strong>"):]
    assert "| over(float*) |" in overloads and "| over(int*) |" in overloads
