"""The compile cache: a warm re-run compiles nothing, and any edit to what decides a compile
(the source, a header it includes, the flags) compiles again."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from conftest import private_cache
from cudamatrix.config.plan import cell_slug

HEADER = "#pragma once\n#define SCALE 3.0f\n"
KERNEL = """#include "scale.h"
extern "C" __global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= SCALE;
}
"""


def _case(root: Path) -> Path:
    folder = root / "scale"
    folder.mkdir(parents=True)
    # A unique comment keeps this test's keys apart from every earlier run's.
    (folder / "scale.h").write_text(f"// {uuid.uuid4()}\n{HEADER}")
    (folder / "scale.cu").write_text(KERNEL)
    (folder / "case.toml").write_text(
        'title = "scale"\n[[variant]]\nname = "v"\nsource = "scale.cu"\nfrontend = "nvrtc"\n'
        '  [[variant.artifact]]\n  in = "ptx"\n  contains = "mul.f32"\n')
    return folder


def _hits(run) -> dict[str, bool]:
    return {cell_id: cell["stages"][0]["details"].get("cache") == "hit"
            for cell_id, cell in run.cells().items()}


def test_warm_run_compiles_nothing_and_edits_recompile(run_cli, tmp_path: Path) -> None:
    folder = _case(tmp_path / "cases")
    args = ("run", "--corpus", str(tmp_path / "cases"), "--case", "scale", "--toolkit", "12.4",
            "--toolkit", "13.0", "--arch", "sm_80", "--arch", "sm_90")
    cold = run_cli(*args, out=tmp_path / "cold")
    assert cold.code == 0, cold.output
    assert set(_hits(cold).values()) == {False}

    warm = run_cli(*args, out=tmp_path / "warm")
    assert warm.code == 0, warm.output
    assert set(_hits(warm).values()) == {True}
    for cell_id, cell in warm.cells().items():
        before = cold.cells()[cell_id]
        assert (cell["outcome"], cell["message"]) == (before["outcome"], before["message"])
        # The restored artifacts are the compiled ones, and the artifact check ran on them.
        assert [s["stage"] for s in cell["stages"]] == ["compile", "inspect", "load"]
        ptx = tmp_path / "warm" / "artifacts" / cell_slug(cell_id) / "kernel.ptx"
        assert "mul.f32" in ptx.read_text()

    # An edit in an included header is an edit: it compiles again, and the change shows.
    (folder / "scale.h").write_text((folder / "scale.h").read_text().replace(
        "3.0f", "3.0f + undefined_name"))
    edited = run_cli(*args, out=tmp_path / "edited")
    assert set(_hits(edited).values()) == {False}
    assert edited.code == 1
    assert all("undefined_name" in c["message"] for c in edited.cells().values())

    # A refusal is a result too: the failed compile is kept and served warm.
    again = run_cli(*args, out=tmp_path / "again")
    assert set(_hits(again).values()) == {True}
    assert {c["outcome"] for c in again.cells().values()} == {"fail"}

    fresh = run_cli(*args, "--no-compile-cache", out=tmp_path / "fresh")
    assert set(_hits(fresh).values()) == {False}


def test_headers_the_source_does_not_name_literally_are_keyed_too(run_cli, tmp_path: Path,
                                                                 cache_copy: Path) -> None:
    """Issue 10, point 5: a computed ``#include HEADER`` and a header found through
    ``--include-path=`` are read by the compiler, so an edit there must recompile."""
    folder = tmp_path / "cases" / "computed"
    (folder / "inc").mkdir(parents=True)
    (folder / "inc" / "factor.h").write_text(f"// {uuid.uuid4()}\n#define FACTOR 2.0f\n")
    (folder / "k.cu").write_text('#define HEADER "factor.h"\n#include HEADER\n'
                                 'extern "C" __global__ void k(float* x) { x[0] *= FACTOR; }\n')
    (folder / "case.toml").write_text(
        'title = "computed include"\n[[variant]]\nname = "v"\nsource = "k.cu"\n'
        'frontend = "nvrtc"\nflags = ["--include-path=inc"]\n')
    args = ("run", "--corpus", str(tmp_path / "cases"), "--case", "computed", "--toolkit",
            "12.4", "--arch", "sm_80", "--cache", str(cache_copy))
    assert run_cli(*args, out=tmp_path / "cold").code == 0
    assert set(_hits(run_cli(*args, out=tmp_path / "warm")).values()) == {True}
    (folder / "inc" / "factor.h").write_text("#define FACTOR undefined_name\n")
    edited = run_cli(*args, out=tmp_path / "edited")
    assert set(_hits(edited).values()) == {False}
    assert {c["outcome"] for c in edited.cells().values()} == {"fail"}


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_another_cache_is_read_never_written(run_cli, tmp_path: Path, own_cache: Path) -> None:
    """--compile-cache-from: a cell compiled into one cache is served to a run with another
    (same verdict, marked where it came from); that cache is never written, and a damaged
    entry in it is passed over and compiled again, not removed."""
    _case(tmp_path / "cases")
    args = ("run", "--corpus", str(tmp_path / "cases"), "--case", "scale", "--toolkit", "13.0",
            "--arch", "sm_80", "--arch", "sm_90")
    filled = run_cli(*args, out=tmp_path / "filled")
    assert filled.code == 0, filled.output[-2000:]
    shared = own_cache
    before = _listing(shared / "compile")
    assert before

    (tmp_path / "reader-cache").mkdir()
    (tmp_path / "third").mkdir()
    own = private_cache(tmp_path / "reader-cache")
    reader = run_cli(*args, "--cache", str(own), "--compile-cache-from", str(shared),
                     out=tmp_path / "reader")
    assert reader.code == 0, reader.output[-2000:]
    for cell_id, cell in reader.cells().items():
        details = cell["stages"][0]["details"]
        assert details["cache"] == "hit" and details["cache_from"] == str(shared), cell_id
        first = filled.cells()[cell_id]
        assert (cell["outcome"], cell["message"]) == (first["outcome"], first["message"])
    assert _listing(shared / "compile") == before
    assert not (own / "compile").exists() or not any((own / "compile").rglob("manifest.json"))

    entry, other = sorted(m.parent for m in (shared / "compile").rglob("manifest.json"))
    (entry / "kernel.ptx").write_text("damaged")
    # The third run's own copy of the other entry is damaged too: dropped, and the cell is
    # served from the shared cache, saying what was dropped on the way.
    third = private_cache(tmp_path / "third")
    own_copy = third / "compile" / other.relative_to(shared / "compile")
    shutil.copytree(other, own_copy)
    (own_copy / "kernel.ptx").write_text("damaged")
    again = run_cli(*args, "--cache", str(third),
                    "--compile-cache-from",
                    str(shared), out=tmp_path / "again")
    assert again.code == 0, again.output[-2000:]
    notes = [c["stages"][0]["details"]["cache"] for c in again.cells().values()]
    assert sorted(n == "hit" for n in notes) == [False, True]
    assert any("passed over (kernel.ptx does not match its hash)" in n for n in notes), notes
    served = [c["stages"][0]["details"] for c in again.cells().values()
              if c["stages"][0]["details"]["cache"] == "hit"]
    assert "dropped (kernel.ptx does not match its hash)" in served[0]["cache_note"]
    assert not own_copy.exists()  # the run's own damaged entry is removed
    assert (entry / "kernel.ptx").read_text() == "damaged"  # not ours to remove


def test_flags_nvcc_takes_from_the_environment_are_keyed(run_cli, tmp_path: Path) -> None:
    """nvcc reads $NVCC_APPEND_FLAGS (CI images set it, e.g. -allow-unsupported-compiler),
    and a cell's nvcc inherits the run's environment: a pass compiled without the flag
    was served to a run with it, whose nvcc refuses the code."""
    folder = tmp_path / "cases" / "guarded"
    folder.mkdir(parents=True)
    (folder / "k.cu").write_text(f"// {uuid.uuid4()}\n#ifdef CUDAMATRIX_BREAK\n"
                                 "#error built with CUDAMATRIX_BREAK\n#endif\n"
                                 "__global__ void k(float *x) { x[0] = 1.0f; }\n")
    (folder / "case.toml").write_text('title = "guarded"\n[[variant]]\nname = "v"\n'
                                      'source = "k.cu"\nfrontend = "nvcc"\n')
    args = ("run", "--corpus", str(tmp_path / "cases"), "--case", "guarded", "--toolkit",
            "13.0", "--arch", "sm_90", "--no-gpu")
    plain = run_cli(*args, out=tmp_path / "plain")
    assert plain.code == 0, plain.output
    flagged = run_cli(*args, out=tmp_path / "flagged",
                      env={"NVCC_APPEND_FLAGS": "-DCUDAMATRIX_BREAK"})
    assert set(_hits(flagged).values()) == {False}
    (cell,) = flagged.cells().values()
    assert cell["outcome"] == "fail" and "built with CUDAMATRIX_BREAK" in cell["message"], cell
    # Set the same again, it is served from the cache as itself.
    again = run_cli(*args, out=tmp_path / "again",
                    env={"NVCC_APPEND_FLAGS": "-DCUDAMATRIX_BREAK"})
    assert set(_hits(again).values()) == {True} and again.code == 1


def test_a_header_outside_the_case_reached_by_a_relative_include(run_cli, tmp_path: Path,
                                                                  cache_copy: Path) -> None:
    """Issue 43: `#include "../common/h.h"` with no -I. After a pass, h.h broken: the run
    noticed the edit but the compile cache served the old pass, the next run answered `up
    to date ... pass` and so did --always-run. Now the broken header compiles again and
    fails, and every later run says fail."""
    cases = tmp_path / "cases"
    (cases / "common").mkdir(parents=True)
    header = cases / "common" / "h.h"
    header.write_text(f"// {uuid.uuid4()}\n#pragma once\n#define SCALE 3.0f\n")
    (cases / "k").mkdir()
    (cases / "k" / "k.cu").write_text('#include "../common/h.h"\n' + KERNEL.split("\n", 1)[1])
    (cases / "k" / "case.toml").write_text(
        'title = "relative include"\n[[variant]]\nname = "v"\nsource = "k.cu"\n'
        'frontend = "nvrtc"\n')
    args = ("run", "--corpus", str(cases), "--case", "k", "--toolkit", "13.0", "--arch",
            "sm_90", "--provider", "wheels", "--no-gpu", "--cache", str(cache_copy))
    out = tmp_path / "out"
    cold = run_cli(*args, out=out)
    assert cold.code == 0, cold.output[-2000:]
    assert {c["outcome"] for c in cold.cells().values()} == {"pass"}

    header.write_text(header.read_text().replace("3.0f", "3.0f + undefined_name"))
    edited = run_cli(*args, out=out)
    assert "h.h changed" in edited.output, edited.output[-2000:]
    assert set(_hits(edited).values()) == {False}
    assert edited.code == 1
    assert all("undefined_name" in c["message"] for c in edited.cells().values())
    again = run_cli(*args, out=out)
    assert again.code == 1 and "up to date" in again.output, again.output[-2000:]
    forced = run_cli(*args, "--always-run", out=out)
    assert forced.code == 1
    assert {c["outcome"] for c in forced.cells().values()} == {"fail"}


def test_a_file_only_the_compiler_knows_it_read_is_never_served_stale(
        run_cli, tmp_path: Path, cache_copy: Path) -> None:
    """Issue 43: `#define H "../common/h.h"` then `#include H`: no reading of the text can
    follow it out of the case's folder, so the key cannot hold h.h. nvcc's own list of what
    it read (-MD) names it: such a compile is not kept, and an edit of h.h is compiled."""
    cases = tmp_path / "cases"
    (cases / "common").mkdir(parents=True)
    header = cases / "common" / "h.h"
    header.write_text(f"// {uuid.uuid4()}\n#pragma once\n#define SCALE 3.0f\n")
    (cases / "k").mkdir()
    (cases / "k" / "k.cu").write_text('#define H "../common/h.h"\n#include H\n'
                                      + KERNEL.split("\n", 1)[1])
    (cases / "k" / "case.toml").write_text(
        'title = "computed include outside"\n[[variant]]\nname = "v"\nsource = "k.cu"\n'
        'frontend = "nvcc"\n')
    args = ("run", "--corpus", str(cases), "--case", "k", "--toolkit", "13.0", "--arch",
            "sm_90", "--no-gpu", "--cache", str(cache_copy))
    cold = run_cli(*args, out=tmp_path / "cold")
    assert cold.code == 0, cold.output[-2000:]
    compiled = cold.cells()["k/v/13.0/sm_90"]["stages"][0]["details"]
    assert str(header.resolve()) in compiled["read_outside"]
    header.write_text(header.read_text().replace("3.0f", "3.0f + undefined_name"))
    edited = run_cli(*args, out=tmp_path / "edited")
    assert set(_hits(edited).values()) == {False}
    assert edited.code == 1 and "undefined_name" in edited.cells()["k/v/13.0/sm_90"]["message"]
