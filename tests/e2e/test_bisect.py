"""`cudamatrix bisect` (issue 26) with real cells: the toolkit where cuda_fp4.h appears
(12.8, between 12.0 and 13.0, in at most 6 cells), the CUTLASS release between 3.4.1 and
4.2.0 where the emitted PyTorch extension starts to build, and the commit of a git
repository made here that breaks its kernel's sm_75 build; each answer with its two
neighbouring cells and their repro commands, the cells an ordinary report; and the user's
mistakes as one line and exit status 2."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import cudamatrix, write_case

FP4_CASE = """\
    title = "FP4 conversions from cuda_fp4.h"

    [[variant]]
    name = "nvrtc"
    source = "fp4.cu"
    frontend = "nvrtc"
    kernel = "to_fp4"
"""
FP4 = """\
#include <cuda_fp4.h>

extern "C" __global__ void to_fp4(const float2 *in, __nv_fp4x2_storage_t *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __nv_cvt_float2_to_fp4x2(in[i], __NV_E2M1, cudaRoundNearest);
}
"""


def _answer(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())["run"]["bisect"]


def test_the_toolkit_where_cuda_fp4_h_appears(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", "fp4", FP4_CASE, {"fp4.cu": FP4})
    out = tmp_path / "out"
    run = cudamatrix("bisect", "--over", "toolkit", "--from", "12.0", "--to", "13.0",
                     "--corpus", str(tmp_path / "cases"), "--case", "fp4", "--arch", "sm_80",
                     "--no-gpu", out=out)
    assert run.code == 0, run.output[-3000:]
    answer = _answer(out)
    (change,) = answer["changes"]
    assert change["at"] == "12.8" and change["before"]["value"] == "12.6"
    assert change["before"]["happened"] == "fails at compile"
    assert "cuda_fp4.h" in change["before"]["message"]
    assert change["after"]["happened"] == "builds"
    assert len(answer["probed"]) <= 6
    cells = json.loads((out / "results.json").read_text())["cells"]
    assert len(cells) == len(answer["probed"])
    assert "toolkit 12.8: fails at compile -> builds" in run.output
    assert "repro: cudamatrix run --corpus" in run.output
    # Its repro line, as every repro: a report folder of its own, compiled again (issue 82).
    repro = next(line for line in run.output.splitlines()
                 if "--cell fp4/nvrtc/12.8/sm_80" in line)
    assert "--toolkit 12.8 " in repro and "--no-compile-cache" in repro, repro
    assert "--out reports/repro/fp4__nvrtc__12.8__sm_80-" in repro, repro
    assert "## Bisect" in (out / "COMPATIBILITY.md").read_text()


def test_the_cutlass_release_where_the_emitted_extension_starts_to_build(tmp_path: Path
                                                                         ) -> None:
    out = tmp_path / "out"
    run = cudamatrix("bisect", "--over", "library:cutlass_python", "--from", "3.4.1",
                     "--to", "4.2.0", "--known-bugs", "--case", "cutlass-sm90",
                     "--variant", "emit-pytorch", "--arch", "sm_90a", "--no-gpu", out=out)
    assert run.code == 0, run.output[-3000:]
    changes = {c["at"]: c for c in _answer(out)["changes"]}
    fixed = changes["3.5.0"]
    assert fixed["before"]["value"] == "3.4.1"
    assert fixed["before"]["happened"] == "fails at compile"
    assert "emitted extension would not build for Hopper" in fixed["before"]["message"]
    assert fixed["after"]["happened"] == "builds"
    # A later release that the matrix does not list runs again from its repro command.
    later = next(c for c in changes.values() if c["at"] != "3.5.0")
    assert "--library cutlass_python==" in later["after"]["repro"]


def _repository(root: Path, commits: int, breaking: int) -> list[str]:
    """A project whose kernel moves to an sm_80-only intrinsic at commit `breaking`."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "cudamatrix.toml").write_text('cases = ["cudamatrix-cases"]\n')
    case = root / "cudamatrix-cases" / "warp-sum"
    case.mkdir(parents=True)
    (case / "case.toml").write_text(textwrap.dedent("""\
        title = "a warp's sum"

        [[variant]]
        name = "nvrtc"
        source = "sum.cu"
        frontend = "nvrtc"
        kernel = "warp_sum"
        """))
    shuffle = ("unsigned s = v; for (int o = 16; o > 0; o /= 2) "
               "s += __shfl_down_sync(0xffffffffu, s, o);")
    for number in range(1, commits + 1):
        body = shuffle if number < breaking else "unsigned s = __reduce_add_sync(0xffffffffu, v);"
        (case / "sum.cu").write_text(
            f"// revision {number}\nextern \"C\" __global__ void warp_sum(const unsigned *in, "
            f"unsigned *out) {{\n    unsigned v = in[threadIdx.x];\n    {body}\n"
            "    if (threadIdx.x == 0) out[blockIdx.x] = s;\n}\n")
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                        "commit", "-qm", f"revision {number}"], check=True)
    listed = subprocess.run(["git", "-C", str(root), "rev-list", "--reverse", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.split()
    return listed


def test_the_commit_that_breaks_the_sm75_build(tmp_path: Path) -> None:
    project = tmp_path / "mylib"
    commits = _repository(project, commits=8, breaking=5)
    out = tmp_path / "out"
    run = cudamatrix("bisect", "--over", "project", "--from", commits[0], "--to", commits[-1],
                     "--case", "warp-sum", "--arch", "sm_75", "--toolkit", "13.0", "--no-gpu",
                     out=out, cwd=project)
    assert run.code == 0, run.output[-3000:]
    (change,) = _answer(out)["changes"]
    assert change["at"] == f"{commits[4][:12]} revision 5"
    assert change["before"]["happened"] == "builds"
    assert change["after"]["happened"] == "fails at compile"
    assert "__reduce_add_sync" in change["after"]["message"]
    assert change["after"]["repro"].startswith(f"git checkout {commits[4][:12]} && ")
    assert len(_answer(out)["probed"]) <= 5
    # The user's working tree is left as it was.
    assert "revision 8" in (project / "cudamatrix-cases" / "warp-sum" / "sum.cu").read_text()


def test_the_commit_of_a_git_project_that_breaks_its_sm75_build(tmp_path: Path) -> None:
    """A build case whose project is a git: source: the commits are that repository's, each
    built by the case's own command."""
    library = tmp_path / "lib"
    commits = _repository(library, commits=6, breaking=3)
    source = (library / "cudamatrix-cases" / "warp-sum" / "sum.cu").relative_to(library)
    command = f"{{nvcc}} -shared -Xcompiler -fPIC {{gencode}} {source} -o libsum.so"
    write_case(tmp_path / "cases", "lib-build", f"""\
        title = "the library's own build"

        [[variant]]
        name = "nvcc"
        frontend = "build"
          [variant.build]
          project = "git:file://{library}@{commits[-1]}"
          commands = ["{command}"]
          outputs = ["libsum.so"]
        """, {})
    out = tmp_path / "out"
    run = cudamatrix("bisect", "--over", "project", "--from", commits[0], "--to", commits[-1],
                     "--corpus", str(tmp_path / "cases"), "--case", "lib-build", "--arch",
                     "sm_75", "--toolkit", "13.0", "--no-gpu", out=out)
    assert run.code == 0, run.output[-3000:]
    (change,) = _answer(out)["changes"]
    assert change["at"] == f"{commits[2][:12]} revision 3"
    assert (change["before"]["happened"], change["after"]["happened"]) == (
        "builds", "fails at compile")
    assert "__reduce_add_sync" in change["after"]["message"]


@pytest.mark.parametrize("args, said", [
    (["--over", "toolkit", "--from", "13.0", "--to", "13.0", "--arch", "sm_80"],
     "error: bisect over toolkit: 1 value(s) between 13.0 and 13.0; it needs two or more"),
    (["--over", "toolkit", "--from", "12.0", "--to", "12.4", "--arch", "sm_120"],
     "error: bisect over toolkit: the selection matches no cell at any value"),
    (["--over", "toolkit", "--from", "12.4", "--to", "13.0"],
     "error: bisect: the selection matches 2 cells, not one"),
    (["--over", "library:nosuch"], "error: --over library:nosuch: unknown library"),
    (["--over", "sideways"], "error: --over sideways: give toolkit, library:NAME or project"),
])
def test_mistakes_are_one_line_and_status_2(tmp_path: Path, args: list[str], said: str
                                            ) -> None:
    write_case(tmp_path / "cases", "fp4", FP4_CASE, {"fp4.cu": FP4})
    config = tmp_path / "cudamatrix.toml"
    config.write_text('cases = ["cases"]\n[tiers.pr]\narch = ["sm_80", "sm_90"]\n')
    run = cudamatrix("bisect", *args, "--case", "fp4", "--no-gpu", cwd=tmp_path,
                     out=tmp_path / "out")
    assert run.code == 2, run.output[-2000:]
    assert said in run.output, run.output[-2000:]
    assert run.output.count("error:") == 1


def test_a_case_folder_named_twice_is_read_once(tmp_path: Path) -> None:
    """A repro names --corpus; run where cudamatrix.toml names the same folder, it once
    failed with "case id 'fp4' already defined" (a bisect's repro line did exactly that)."""
    write_case(tmp_path / "cases", "fp4", FP4_CASE, {"fp4.cu": FP4})
    (tmp_path / "cudamatrix.toml").write_text('cases = ["cases"]\n')
    run = cudamatrix("list", "--corpus", str(tmp_path / "cases"), "--toolkit", "13.0",
                     "--arch", "sm_80", cwd=tmp_path)
    assert run.code == 0, run.output
    assert run.output.split() == ["fp4/nvrtc/13.0/sm_80"]


def test_a_commit_without_the_case_is_skipped_and_said(tmp_path: Path) -> None:
    """Issue 43: a commit where the case folder is gone ended the bisection with 'unknown
    case'; it is skipped, said, and the bisection goes on around it."""
    project = tmp_path / "mylib"
    commits = _repository(project, commits=3, breaking=99)  # every one builds
    case = project / "cudamatrix-cases" / "warp-sum"
    kept = {p.name: p.read_text() for p in case.iterdir()}
    subprocess.run(["git", "-C", str(project), "rm", "-rq", str(case)], check=True)
    (project / "cudamatrix-cases").mkdir(exist_ok=True)
    (project / "cudamatrix-cases" / "README").write_text("moving the case\n")
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "case moved out"], check=True)
    case.mkdir()
    for name, text in kept.items():
        # Back, moved to an sm_80-only intrinsic: the change the bisection must find.
        (case / name).write_text(text.replace(
            "unsigned s = v; for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, "
            "s, o);", "unsigned s = __reduce_add_sync(0xffffffffu, v);"))
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "case back"], check=True)
    last = subprocess.run(["git", "-C", str(project), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    out = tmp_path / "out"
    run = cudamatrix("bisect", "--over", "project", "--from", commits[0], "--to", last,
                     "--case", "warp-sum", "--arch", "sm_75", "--toolkit", "13.0", "--no-gpu",
                     out=out, cwd=project)
    assert run.code == 0, run.output[-3000:]
    answer = _answer(out)
    (change,) = answer["changes"]
    assert change["before"]["happened"] == "builds"
    assert change["after"]["happened"] == "fails at compile"
    assert any("case moved out" in value for value in change["skipped_between"]), change
    skipped = answer["skipped"]
    assert any("case moved out" in value and "no cell at this commit" in why
               and "no cases" in why for value, why in skipped.items()), skipped
