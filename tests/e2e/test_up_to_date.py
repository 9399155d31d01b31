"""A run whose inputs did not change since the last run into its --out answers from that
run's record at once (cudamatrix.common.up_to_date), with real compilers deciding every verdict
the record carries: a run whose compiles the compile cache kept is recorded (one that ran
what it does not keep is not: tests/e2e/test_case_isolation.py), an edit, an environment
variable, a program installed on PATH, a removed artifact or --always-run run it again,
and the run after an edit judges the edited code."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import ADD_KERNEL, TWO_COMPILERS_CASE, Run, cudamatrix, write_case
from cudamatrix.common.up_to_date import RECORD

BROKEN = ADD_KERNEL + "#error this kernel no longer builds\n"


def _run(project: Path, *extra: str, arch: str = "sm_90",
         env: dict[str, str] | None = None) -> Run:
    # A cache of its own: the first run must compile (another test may have compiled the
    # same kernel into the shared one).
    return cudamatrix("run", "--corpus", "cases", "--toolkit", "13.0", "--arch", arch,
                      "--no-gpu", "--cache", str(project / "cache"), *extra,
                      out=project / "out", cwd=project, env=env)


def _stamps(out: Path) -> dict[str, int]:
    """Every file the run wrote, by its modification time."""
    return {str(p): p.stat().st_mtime_ns for p in out.rglob("*")
            if p.is_file() and p.name not in (RECORD, ".cudamatrix.lock")}


def _summary(run: Run) -> str:
    return next(line for line in run.output.splitlines() if line.startswith("pass="))


def test_an_unchanged_run_answers_from_its_record_and_an_edit_is_judged(tmp_path: Path
                                                                          ) -> None:
    write_case(tmp_path / "cases", "uptodate", TWO_COMPILERS_CASE, {"k.cu": ADD_KERNEL})
    cold = _run(tmp_path)
    assert cold.code == 0, cold.output
    assert {c["stages"][0]["details"].get("cache") for c in cold.cells().values()} == {None}
    verdicts = {i: c["outcome"] for i, c in cold.cells().items()}  # read now: runs rewrite it
    # Its compiles ran and the compile cache kept each: a re-run would take every cell from
    # there as it is, so the cold run's own verdicts stand, recorded.
    assert (tmp_path / "out" / RECORD).exists()
    written = _stamps(tmp_path / "out")

    again = _run(tmp_path)
    assert again.code == 0, again.output
    assert again.output.startswith("up to date: "), again.output
    assert _summary(again) == _summary(cold)
    assert _stamps(tmp_path / "out") == written  # not one file written again

    # What the record stands for: every cell from the compile cache, the same verdicts.
    forced = _run(tmp_path, "--always-run")
    assert forced.code == 0 and "up to date" not in forced.output, forced.output
    assert {c["stages"][0]["details"].get("cache") for c in forced.cells().values()} == {"hit"}
    assert {i: c["outcome"] for i, c in forced.cells().items()} == verdicts

    (tmp_path / "cases" / "uptodate" / "k.cu").write_text(BROKEN)
    edited = _run(tmp_path)
    assert f"running: {tmp_path / 'cases' / 'uptodate' / 'k.cu'} changed" in edited.output
    assert edited.code == 1, edited.output
    cells = edited.cells()
    for cell in cells.values():
        assert cell["outcome"] == "fail" and cell["stage"] == "compile", cell
    assert "no longer builds" in cells["uptodate/nvcc/13.0/sm_90"]["message"]

    # The compilers' refusals are kept too: the next run answers with the same exit status.
    failed = _run(tmp_path)
    assert failed.code == 1 and failed.output.startswith("up to date: "), failed.output
    assert "fail=2" in _summary(failed)


def test_what_a_run_did_not_make_runs_it_again(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", "uptodate", TWO_COMPILERS_CASE, {"k.cu": ADD_KERNEL})
    tools = tmp_path / "bin"
    tools.mkdir()
    path = {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    assert _run(tmp_path, env=path).code == 0
    assert _run(tmp_path, env=path).output.startswith("up to date: ")

    # A program installed in a folder of PATH (a host compiler a skip asked for).
    (tools / "g++-99").write_text("#!/bin/sh\n")
    installed = _run(tmp_path, env=path)
    assert f"running: {tools / 'g++-99'} changed" in installed.output, installed.output

    # An artifact removed from --out: the run puts it back.
    cubins = sorted((tmp_path / "out" / "artifacts").rglob("*.cubin"))
    assert cubins
    cubins[0].unlink()
    removed = _run(tmp_path, env=path)
    assert f"running: a file in {tmp_path / 'out'} changed" in removed.output, removed.output
    assert cubins[0].exists()

    # Another option.
    other = _run(tmp_path, arch="sm_80", env=path)
    assert "running: its command line and options changed" in other.output, other.output
    assert json.loads((tmp_path / "out" / "results.json").read_text())["cells"][0]["id"] \
        .endswith("sm_80")
    assert _run(tmp_path, arch="sm_80", env=path).output.startswith("up to date: ")

    # An environment variable a compiler reads, and then not.
    variable = _run(tmp_path, arch="sm_80", env={**path, "NVCC_APPEND_FLAGS": "-DN=4"})
    assert "running: its environment changed" in variable.output, variable.output
    unset = _run(tmp_path, arch="sm_80", env=path)
    assert "running: its environment changed" in unset.output, unset.output
    assert _run(tmp_path, arch="sm_80", env=path).output.startswith("up to date: ")

    # --always-run, where the record would hold.
    forced = _run(tmp_path, "--always-run", arch="sm_80", env=path)
    assert forced.code == 0 and "up to date" not in forced.output, forced.output
    assert {c["stages"][0]["details"].get("cache") for c in forced.cells().values()} == {"hit"}


def test_what_other_runs_do_in_the_same_cache_changes_nothing_it_read(tmp_path: Path
                                                                       ) -> None:
    """CI's two workers share one cache: a run there preparing another toolkit (its
    description written) or compiling another case must leave this run's record standing;
    the toolkit its cells used, installed again, must not."""
    write_case(tmp_path / "cases", "uptodate", TWO_COMPILERS_CASE, {"k.cu": ADD_KERNEL})
    assert _run(tmp_path).code == 0  # compiled, each compile kept: recorded
    cache = tmp_path / "cache"
    entries = {p for p in (cache / "compile").rglob("*")}

    # Another run into the same cache compiles another case ...
    write_case(tmp_path / "others", "other", TWO_COMPILERS_CASE,
               {"k.cu": ADD_KERNEL.replace("1.0f", "2.0f")})
    beside = cudamatrix("run", "--corpus", "others", "--toolkit", "13.0", "--arch", "sm_90",
                        "--no-gpu", "--cache", str(cache), out=tmp_path / "beside", cwd=tmp_path)
    assert beside.code == 0, beside.output
    assert {p for p in (cache / "compile").rglob("*")} > entries
    # ... and another prepares a toolkit this run did not use.
    (cache / "toolkits" / "wheels-11.8").mkdir(parents=True, exist_ok=True)
    (cache / "toolkits" / "wheels-11.8" / "cudamatrix-described.json").write_text("{}")
    standing = _run(tmp_path)
    assert standing.code == 0 and standing.output.startswith("up to date: "), standing.output

    # The toolkit its cells compiled with, installed again.
    marker = cache / "toolkits" / "wheels-13.0" / "cudamatrix-environment.json"
    again = marker.with_name("reinstalled")
    again.write_text(marker.read_text())
    again.replace(marker)
    reinstalled = _run(tmp_path)
    assert f"running: {marker} changed" in reinstalled.output, reinstalled.output


PRE_INCLUDED_CASE = """\
title = "a header its flags include"

[[variant]]
name = "nvcc"
source = "k.cu"
frontend = "nvcc"
flags = ["-include", "{t}/pre.h"]
"""


def test_a_file_the_flags_include_is_watched(tmp_path: Path) -> None:
    """Issue 57, point 8: `-include {t}/pre.h` from a [paths] tree is in the compile key;
    the up-to-date record watches it too, so the run after pre.h breaks compiles again and
    fails, where it answered "up to date" with a stale pass."""
    (tmp_path / "tree").mkdir()
    pre = tmp_path / "tree" / "pre.h"
    pre.write_text("#define SCALE 2.0f\n")
    (tmp_path / "cudamatrix.toml").write_text('cases = ["cases"]\n[paths]\nt = "tree"\n')
    write_case(tmp_path / "cases", "pre", PRE_INCLUDED_CASE, {
        "k.cu": "__global__ void k(float *x) { x[threadIdx.x] *= SCALE; }\n"})
    first = cudamatrix("run", "--toolkit", "13.0", "--arch", "sm_90", "--no-gpu", "--cache",
                       str(tmp_path / "cache"), out=tmp_path / "out", cwd=tmp_path)
    assert first.code == 0, first.output
    assert (tmp_path / "out" / RECORD).exists()
    pre.write_text('#error "pre.h broke"\n')
    second = cudamatrix("run", "--toolkit", "13.0", "--arch", "sm_90", "--no-gpu", "--cache",
                        str(tmp_path / "cache"), out=tmp_path / "out", cwd=tmp_path)
    assert "up to date" not in second.output and second.code == 1, second.output
    assert "pre.h broke" in second.cells()["pre/nvcc/13.0/sm_90"]["message"]


def test_a_tree_holding_out_and_the_cache_is_up_to_date_on_its_second_run(tmp_path: Path
                                                                         ) -> None:
    """Issue 57: a [paths] tree at the project's root (root = ".") holds --out and the
    cache; every run changed what the compile key and the record hashed, so nothing was ever
    up to date or served from the compile cache. A run's --out (its lock) and a cache (its
    CACHEDIR.TAG) are the tool's own, never inputs."""
    (tmp_path / "cudamatrix.toml").write_text('cases = ["cases"]\n[paths]\nt = "."\n')
    write_case(tmp_path / "cases", "pre", PRE_INCLUDED_CASE.replace(
        '["-include", "{t}/pre.h"]', '["-I{t}"]'), {
        "k.cu": '#include "pre.h"\n__global__ void k(float *x) { x[threadIdx.x] *= SCALE; }\n'})
    (tmp_path / "pre.h").write_text("#define SCALE 2.0f\n")
    runs = [cudamatrix("run", "--toolkit", "13.0", "--arch", "sm_90", "--no-gpu", "--cache",
                       str(tmp_path / "cache"), out=tmp_path / "out", cwd=tmp_path)
            for _ in range(2)]
    assert runs[0].code == 0, runs[0].output
    assert (tmp_path / "cache" / "CACHEDIR.TAG").is_file()
    assert runs[1].code == 0 and runs[1].output.startswith("up to date: "), runs[1].output


def test_a_build_case_is_up_to_date_while_its_tree_is(tmp_path: Path) -> None:
    """Issue 61, point 4: a run with a build case was never recorded (a build is not in the
    compile cache), so a second identical run built everything again, minutes, with no line
    saying why. A build is what its tree, toolkit and tools make: the second run answers
    from the record, an edit of the tree runs it again, and a run that cannot stand for the
    next (--no-compile-cache) is named by the next one's first line."""
    case = tmp_path / "cases" / "built"
    case.mkdir(parents=True)
    (case / "k.cu").write_text('extern "C" __global__ void k(float* y) { y[0] = 1.0f; }\n')
    (case / "case.toml").write_text('''
title = "a build, twice"
[[variant]]
name = "nvcc"
frontend = "build"
timeout = 300
  [variant.build]
  commands = ["{nvcc} -shared -Xcompiler -fPIC -arch={arch} -o libk.so k.cu"]
  outputs = ["*.so"]
''')

    def run(*extra: str) -> Run:
        return cudamatrix("run", "--corpus", "cases", "--toolkit", "13.0", "--arch", "sm_80",
                          "--no-gpu", *extra, out=tmp_path / "out", cwd=tmp_path)

    first = run()
    assert first.code == 0 and _summary(first).startswith("pass=1 "), first.output[-2000:]
    again = run()
    assert again.code == 0 and again.output.startswith("up to date: "), again.output
    (case / "k.cu").write_text('extern "C" __global__ void k(float* y) { y[0] = 2.0f; }\n')
    edited = run()
    assert edited.output.startswith("running: ") and "k.cu changed" in edited.output.split(
        "\n")[0], edited.output
    run("--no-compile-cache")
    said = run().output.splitlines()[0]
    assert said.startswith(f"running: the last run into {tmp_path / 'out'} cannot stand for "
                           "this one ("), said
