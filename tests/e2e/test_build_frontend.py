"""The build frontend (issue 14, point 3): a project's own build run per cell with the
cell's toolkit, arch and host compiler, its outputs audited per arch. Real CMake, real
setuptools with pybind11, real nvcc (the 13.0 wheel's, Debian's 12.4) and a real PyPI
sdist (CuVec 6.0.1, scikit-build-core), fetched at test time."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import EVIDENCE, REPO, cudamatrix, private_cache

CASES = REPO / "tests" / "data" / "build-cases"


def _modules(cell: dict) -> list[dict]:
    inspect = next(s for s in cell["stages"] if s["stage"] == "inspect")
    return inspect["details"]["modules"]


def test_a_projects_own_build_runs_per_toolkit_and_arch(tmp_path: Path) -> None:
    run = cudamatrix("run", "--corpus", str(CASES), "--case", "cmake-saxpy", "--case",
                     "pybind11-ext", "--toolkit", "12.4", "--toolkit", "13.0", "--arch", "sm_80",
                     "--arch", "sm_90a", out=tmp_path / "out")
    assert run.code == 0, run.output[-3000:]
    cells = run.cells()
    # CMake took the arch from $CUDAARCHS and the toolkit from $CUDA_HOME/$CUDACXX.
    built = cells["cmake-saxpy/cudaarchs/13.0/sm_80"]
    assert built["outcome"] == "pass", built["message"]
    assert [m["ships"] for m in _modules(built)] == ["SASS sm_80; PTX compute_80 (ISA 9.0)"]
    assert built["versions"]["project"].startswith("cmake-saxpy/ (")
    assert built["versions"]["nvcc"] == "13.0.88"
    hopper = cells["cmake-saxpy/cudaarchs/13.0/sm_90a"]
    assert _modules(hopper)[0]["ships"].startswith("SASS sm_90a"), hopper
    # A build that pins its own arch: CUDA 13 no longer builds sm_70 at all.
    pinned = cells["cmake-saxpy/pinned-sm70/13.0/sm_80"]
    assert pinned["outcome"] == "xfail"
    assert pinned["message"] == "nvcc fatal   : Unsupported gpu architecture 'compute_70'"
    # Debian's nvcc over the 12.4 wheels links no static runtime the wheels lack: a skip
    # naming the library, not the project's failure.
    for cell_id in ("cmake-saxpy/cudaarchs/12.4/sm_80", "pybind11-ext/setup-py/12.4/sm_90a"):
        assert cells[cell_id]["outcome"] == "skip", cells[cell_id]
        assert "ships no libcudadevrt" in cells[cell_id]["message"]
    # setup.py build_ext through nvcc, pybind11 from the case's build requirements.
    extension = cells["pybind11-ext/setup-py/13.0/sm_90a"]
    assert extension["outcome"] == "pass", extension["message"]
    assert extension["versions"]["pybind11 (build)"] == "2.13.6"
    assert [(m["ships"], m["via"]) for m in _modules(extension) if m["kernels"]] == \
        [("SASS sm_90a; PTX none", "sass")]


def test_a_real_sdist_is_fetched_checked_and_built_as_pip_builds_it(tmp_path: Path) -> None:
    run = cudamatrix("run", "--corpus", str(CASES), "--case", "cuvec-sdist", "--toolkit", "13.0",
                     "--arch", "sm_80", out=tmp_path / "out")
    assert run.code == 0, run.output[-3000:]
    cells = run.cells()
    defined = cells["cuvec-sdist/pip-wheel-cmake-define/13.0/sm_80"]
    assert defined["outcome"] == "pass", defined["message"]
    assert defined["versions"]["project"].startswith("sdist:cuvec==6.0.1 (bd6c1e4f3704")
    modules = _modules(defined)
    assert len(modules) == 5 and all(m["ships"].startswith("SASS sm_80") for m in modules)
    assert all(m["file"].startswith("cuvec-6.0.1-") for m in modules)
    # CuVec sets CMAKE_CUDA_ARCHITECTURES=native before enabling CUDA, so $CUDAARCHS never
    # reaches it; with no GPU here CMake falls back to nvcc's default: the build runs on
    # sm_80 only through the driver's PTX JIT, and the cell says so.
    ignored = cells["cuvec-sdist/pip-wheel-cudaarchs/13.0/sm_80"]
    inspect = next(s for s in ignored["stages"] if s["stage"] == "inspect")
    assert inspect["message"].startswith("no SASS for sm_80 in cuvec-6.0.1-"), inspect
    assert "PTX JIT" in inspect["message"]


def test_the_published_h100_run_of_the_build_cases(tmp_path: Path) -> None:
    """bench/evidence/build-h100: the three build cases built by the H100 machine's nvcc 13.0, every
    module loaded by its driver, each test command run there; the report shows each
    expected failure's note beside its table."""
    run = cudamatrix("report", str(EVIDENCE / "build-h100" / "results.json"),
                     out=tmp_path)
    assert run.code == 0, run.output
    cells = {c["id"]: c for c in run.results["cells"]}
    assert run.results["run"]["device"]["name"] == "NVIDIA H100 80GB HBM3"
    ran = [c for c in cells.values() if [s["stage"] for s in c["stages"]][-1] == "run"]
    assert len(ran) == 11 and all(c["stages"][-1]["status"] == "ok" for c in ran)
    refused = cells["pybind11-ext/setup-py/13.0/sm_80"]
    assert (refused["outcome"], refused["stage"]) == ("xfail", "load")
    assert "CUDA_ERROR_NO_BINARY_FOR_GPU" in refused["message"]
    markdown = (tmp_path / "COMPATIBILITY.md").read_text()
    assert f"- {refused['note']} (13.0 sm_80)" in markdown


def test_a_builds_kernels_are_held_to_a_budget_from_cuobjdumps_figures(tmp_path: Path) -> None:
    """[variant.resources] on a build case: each kernel of the built library, read back by
    cuobjdump -res-usage for the cell's arch, against the limits (spills, which only ptxas
    prints, are refused when the case is read)."""
    import shutil

    corpus = tmp_path / "cases"
    shutil.copytree(CASES / "cmake-saxpy", corpus / "budget")
    table = (CASES / "cmake-saxpy" / "case.toml").read_text().split("[[variant]]")
    build = table[1].replace('name = "cudaarchs"', 'name = "{name}"')
    (corpus / "budget" / "case.toml").write_text(
        table[0] + "[[variant]]" + build.replace("{name}", "tight")
        + '  [variant.resources]\n  max_registers = 2\n'
        + "[[variant]]" + build.replace("{name}", "roomy")
        + '  [variant.resources]\n  kernel = "saxpy_kernel"\n  max_registers = 255\n'
        + "  max_stack = 0\n")
    run = cudamatrix("run", "--corpus", str(corpus), "--toolkit", "13.0", "--arch", "sm_80",
                     out=tmp_path / "out")
    cells = run.cells()
    tight = cells["budget/tight/13.0/sm_80"]
    assert tight["outcome"] == "fail" and tight["stage"] == "inspect", tight["message"]
    assert "registers > max_registers 2 (cuobjdump -res-usage, sm_80)" in tight["message"]
    roomy = cells["budget/roomy/13.0/sm_80"]
    assert roomy["outcome"] == "pass", roomy["message"]
    assert [(r["name"], r["arch"], r["file"]) for r in roomy["resources"]] == \
        [("saxpy_kernel", "sm_80", "libsaxpy.so")], roomy["resources"]
    (corpus / "budget" / "case.toml").write_text(
        table[0] + "[[variant]]" + build.replace("{name}", "spills")
        + '  [variant.resources]\n  max_spill_stores = 0\n')
    refused = cudamatrix("validate", "--corpus", str(corpus))
    assert refused.code == 2 and "record no spill figures" in refused.output, refused.output


def test_a_cell_that_fails_on_its_first_attempt_only_is_flaky(tmp_path: Path) -> None:
    """Issue 60, point 4: a build whose first attempt fails (a step that fails once, as a
    runner's lost download does) and whose second passes: with --retries 1 the cell passes,
    flaky, both attempts recorded and marked in every report; without, it fails."""
    case = tmp_path / "cases" / "once"
    case.mkdir(parents=True)
    (case / "k.cu").write_text('extern "C" __global__ void k(float* y) { y[0] = 1.0f; }\n')
    mark = tmp_path / "failed-once"
    (case / "case.toml").write_text(f'''
title = "fails on its first attempt only"
[[variant]]
name = "once"
frontend = "build"
timeout = 300
  [variant.build]
  commands = ["bash -c 'test -e {mark} || {{ touch {mark}; echo lost the runner >&2; exit 1; }}'",
              "{{nvcc}} -shared -Xcompiler -fPIC -arch={{arch}} -o libk.so k.cu"]
  outputs = ["*.so"]
''')
    args = ("run", "--corpus", str(tmp_path / "cases"), "--case", "once", "--toolkit", "13.0",
            "--arch", "sm_80")
    retried = cudamatrix(*args, "--retries", "1", out=tmp_path / "retried")
    assert retried.code == 0, retried.output[-3000:]
    (cell,) = retried.cells().values()
    assert (cell["outcome"], cell["flaky"]) == ("pass", True), cell["message"]
    assert [(a["outcome"], a["stage"]) for a in cell["attempts"]] == [("fail", "compile")]
    assert "lost the runner" in cell["attempts"][0]["message"]
    markdown = (tmp_path / "retried" / "COMPATIBILITY.md").read_text()
    assert "## 🔁 Flaky (1)" in markdown and "fail at compile → pass" in markdown
    page = (tmp_path / "retried" / "report.html").read_text()
    data = json.loads(page.split('<script type="application/json" id="cells-data">', 1)[1]
                      .split("</script>", 1)[0])
    keys, (row,) = data["cells"]["keys"], data["cells"]["rows"]
    assert dict(zip(keys, row, strict=True))["flaky"] is True  # the page's panel marks it
    mark.unlink()
    # The build's commands read a file outside the project (the mark), which no cache key
    # can see: the kept build would answer, so this run builds without the caches.
    once = cudamatrix(*args, "--retries", "0", "--always-run", "--no-compile-cache",
                      out=tmp_path / "once")
    (cell,) = once.cells().values()
    assert once.code == 1 and cell["outcome"] == "fail" and not cell["flaky"], cell


def test_a_build_cells_repro_rebuilds_it_by_hand(tmp_path: Path) -> None:
    """Issue 61, point 5: `repro` refused a build cell, and its log showed
    `$ {nvcc} ... -arch={arch}` unfilled, without the environment the tool set (a rebuild
    by hand needed LIBRARY_PATH). The log now shows each command as it ran, and `repro`
    prints a script that copies the project, sets the cell's environment and runs them."""
    import subprocess

    case = tmp_path / "cases" / "byhand"
    case.mkdir(parents=True)
    (case / "k.cu").write_text('extern "C" __global__ void k(float* y) { y[0] = 1.0f; }\n')
    (case / "case.toml").write_text('''
title = "a build rebuilt by hand"
[[variant]]
name = "nvcc"
frontend = "build"
timeout = 300
  [variant.build]
  commands = ["{nvcc} -shared -Xcompiler -fPIC -arch={arch} -o libk.so k.cu",
              "bash -c 'test -n \\"$CUDAARCHS\\" && test -n \\"$CUDA_HOME\\"'"]
  outputs = ["*.so"]
''')
    out = tmp_path / "out"
    run = cudamatrix("run", "--corpus", str(tmp_path / "cases"), "--toolkit", "13.0",
                     "--arch", "sm_80", out=out)
    assert run.code == 0, run.output[-3000:]
    cell_id = "byhand/nvcc/13.0/sm_80"
    log = next(s for s in run.cells()[cell_id]["stages"] if s["stage"] == "compile")["log"]
    assert "-arch=sm_80" in log and "{arch}" not in log and "{nvcc}" not in log, log
    # The script is the case's build as it is here (issue 68): repro reads the corpus.
    script = cudamatrix("repro", cell_id, "--out", str(out), "--corpus", str(tmp_path / "cases"))
    assert script.code == 0, script.output
    assert "export CUDAARCHS=80" in script.output and "export CUDA_HOME=" in script.output
    rebuilt = subprocess.run(["sh", "-c", script.output], capture_output=True, text=True,
                             cwd=tmp_path, check=False)
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    folder = rebuilt.stderr.split("building in ", 1)[1].split()[0]
    assert (Path(folder) / "libk.so").is_file()


def test_a_build_that_links_nvidias_libraries_finds_them_in_the_toolkit(tmp_path: Path
                                                                       ) -> None:
    """Issue 61, point 1: a CMake build linking CUDA::cublas failed on 13.0 from wheels
    ('Target "bitsandbytes" links to: CUDA::cublas ... target was not found'): the wheels
    toolkit had the headers, not the libraries a CUDA install has for linking. The
    components its build files name are fetched into $CUDA_HOME/lib64; where a release
    lacks what the build links, a skip names it, never a fail."""
    run = cudamatrix("run", "--corpus", str(CASES), "--case", "cmake-cublas", "--toolkit",
                     "13.0", "--toolkit", "12.4", "--arch", "sm_80", out=tmp_path / "out")
    assert run.code == 0, run.output[-3000:]
    cells = run.cells()
    built = cells["cmake-cublas/cmake/13.0/sm_80"]
    assert built["outcome"] == "pass", built["message"]
    assert {"nvidia-cublas (libraries)", "nvidia-curand (libraries)"} <= set(built["versions"])
    assert _modules(built) and _modules(built)[0]["ships"].startswith("SASS sm_80")
    older = cells["cmake-cublas/cmake/12.4/sm_80"]
    assert older["outcome"] == "skip" and "ships no libcudadevrt" in older["message"], older


def test_an_unchanged_build_is_not_built_again_when_a_case_is_added(tmp_path: Path) -> None:
    """Issue 82, item 8: a second case added to the corpus rebuilt the first, unchanged
    (8.9 s, 9.6 s). Real CMake and nvcc 13.0: the second run, which has a case more and so
    cannot be answered from the first's record, takes the first case's build from the
    build cache (the same verdict and audit), and builds only the new case."""
    corpus = tmp_path / "cases"
    shutil.copytree(CASES / "cmake-saxpy", corpus / "cmake-saxpy")
    cache = private_cache(tmp_path)

    def run(out: str, *cases: str) -> dict[str, dict]:
        chosen = [word for case in cases for word in ("--case", case)]
        done = cudamatrix("run", "--corpus", str(corpus), *chosen, "--variant", "cudaarchs",
                          "--toolkit", "13.0", "--arch", "sm_80", "--no-gpu",
                          "--cache", str(cache), out=tmp_path / out)
        assert done.code == 0, done.output[-3000:]
        return {c["case"]: c for c in done.cells().values()}

    first = run("one", "cmake-saxpy")
    assert first["cmake-saxpy"]["outcome"] == "pass", first["cmake-saxpy"]["message"]
    assert first["cmake-saxpy"]["stages"][0]["details"].get("cache") is None
    shutil.copytree(CASES / "cmake-saxpy", corpus / "cmake-saxpy-again")
    second = run("two", "cmake-saxpy", "cmake-saxpy-again")
    kept, new = second["cmake-saxpy"], second["cmake-saxpy-again"]
    assert kept["stages"][0]["details"]["cache"] == "hit", kept["stages"][0]
    assert new["stages"][0]["details"].get("cache") is None  # another case: built
    assert (kept["outcome"], _modules(kept)) == ("pass", _modules(first["cmake-saxpy"]))
