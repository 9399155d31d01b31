"""A case cannot harm another cell, the cache or the machine (issue 11, points 1 to 6).

Each test reproduces an attack or an accident that once got through, with real
compilers, real processes and the real cache; each failed on the code before its fix.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    ADD_KERNEL,
    SCALE_KERNEL,
    TWO_COMPILERS_CASE,
    Run,
    cudamatrix,
    scale_case,
    write_case,
)
from cudamatrix.common.up_to_date import refusals
from cudamatrix.config.plan import cell_slug
from cudamatrix.orchestrator.compile_cache import MANIFEST, CompileCache
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.process.limits import KEPT_OUTPUT_BYTES, run_tool

CELL = ("--toolkit", "12.4", "--arch", "sm_80")


def _run(corpus: Path, out: Path, cache: Path, *args: str) -> Run:
    """One run of the corpus's cases; a --toolkit in `args` replaces the default one."""
    cell = CELL[2:] if "--toolkit" in args else CELL
    cases = [word for folder in sorted(corpus.iterdir()) for word in ("--case", folder.name)]
    return cudamatrix("run", "--corpus", str(corpus), *cases, *cell, "--cache", str(cache),
                      *args, out=out)


def _only(run: Run) -> dict[str, Any]:
    cells = list(run.cells().values())
    assert len(cells) == 1, run.output[-2000:]
    return cells[0]


# -- 1. a link out of a cell's folder never reaches the cache --------------------------

def test_cache_never_stores_what_a_link_points_at(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text("HOST SECRET 1234")
    work = tmp_path / "cell"
    work.mkdir()
    (work / "kernel.ptx").symlink_to(secret)
    cache = CompileCache(tmp_path / "cache")
    stored = cache.store("ab" * 32, work, StageResult("compile", "ok"))
    assert not stored
    for path in (tmp_path / "cache").rglob("*"):
        assert not path.is_file() or b"HOST SECRET" not in path.read_bytes()


# -- 2. artifacts are copies, every entry is checked on read ---------------------------

def _compile_cache(out: Path) -> str:
    return str(_only(Run(0, "", out))["stages"][0]["details"].get("cache", ""))


def test_artifacts_are_copies_and_a_damaged_entry_is_dropped(tmp_path: Path,
                                                            cache_copy: Path) -> None:
    write_case(tmp_path / "c", "scale", scale_case(title="scale", variant="v"),
               {"k.cu": SCALE_KERNEL % f"{time.time_ns()}.0f"})
    cold = _run(tmp_path / "c", tmp_path / "cold", cache_copy)
    assert cold.code == 0, cold.output[-2000:]
    warm = _run(tmp_path / "c", tmp_path / "warm", cache_copy)
    assert _compile_cache(warm.out) == "hit"
    slug = cell_slug(next(iter(warm.cells())))
    restored = tmp_path / "warm" / "artifacts" / slug / "kernel.ptx"
    assert restored.stat().st_nlink == 1  # a copy: editing it cannot edit the cache
    restored.write_text("poisoned")
    again = _run(tmp_path / "c", tmp_path / "again", cache_copy)
    assert _compile_cache(again.out) == "hit"
    assert "poisoned" not in (tmp_path / "again" / "artifacts" / slug / "kernel.ptx").read_text()

    # Damage the entry itself: it is noticed, dropped, and the cell compiles again.
    entries = [p.parent for p in (cache_copy / "compile").rglob(MANIFEST)]
    for entry in entries:
        (entry / "kernel.ptx").write_text("truncated")
    damaged = _run(tmp_path / "c", tmp_path / "damaged", cache_copy)
    cell = _only(damaged)
    assert cell["outcome"] == "pass", cell["message"]
    assert "dropped (kernel.ptx does not match its hash)" in _compile_cache(damaged.out)
    healed = _run(tmp_path / "c", tmp_path / "healed", cache_copy)
    assert _compile_cache(healed.out) == "hit"


# -- 3. an accident is never cached; one --out, one run --------------------------------

def test_memory_limit_is_an_error_never_a_cached_verdict(tmp_path: Path,
                                                        cache_copy: Path) -> None:
    # NVRTC refuses a file that is not a regular one; nvcc's host preprocessor reads on.
    write_case(tmp_path / "c", "zero", scale_case(title="reads /dev/zero").replace("nvrtc", "nvcc"),
               {"k.cu": '#include "/dev/zero"\n' + SCALE_KERNEL % "2.0f"})
    started = time.monotonic()
    nvcc = ("--toolkit", "13.0", "--cell-memory", "1")
    first = _run(tmp_path / "c", tmp_path / "first", cache_copy, *nvcc)
    cell = _only(first)
    assert cell["outcome"] == "error", (cell["outcome"], cell["message"])
    assert time.monotonic() - started < 120
    # Not kept, so a re-run would compile again: the run keeps only why it cannot stand.
    said = refusals(tmp_path / "first")
    assert said and any("ran its nvcc stages, which are not kept" in r for r in said), said
    second = _run(tmp_path / "c", tmp_path / "second", cache_copy, *nvcc)
    assert _only(second)["stages"][0]["details"].get("cache") != "hit"
    assert not list((cache_copy / "compile").rglob(MANIFEST))


def test_a_second_run_on_the_same_out_is_refused(tmp_path: Path, cache_copy: Path) -> None:
    write_case(tmp_path / "c", "one", scale_case(title="one", variant="v"),
               {"k.cu": SCALE_KERNEL % "2.0f"})
    out = tmp_path / "out"
    out.mkdir()
    with (out / ".cudamatrix.lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        refused = _run(tmp_path / "c", out, cache_copy)
    assert refused.code == 2, refused.output[-2000:]
    assert f"{out}: another run is writing this folder" in refused.output
    assert "Traceback" not in refused.output
    assert _run(tmp_path / "c", out, cache_copy).code == 0


# -- 4. processes and output -----------------------------------------------------------

def _alive(marker: str) -> bool:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, check=False)
    return found.returncode == 0


def test_a_helper_holding_the_output_open_does_not_hang_a_finished_tool() -> None:
    marker = f"sleep {4000 + os.getpid() % 1000}.5"
    started = time.monotonic()
    tool = run_tool(["sh", "-c", f"{marker} & echo compiled"], timeout=30)
    assert time.monotonic() - started < 10
    assert (tool.code, tool.output) == (0, "compiled")
    assert not _alive(marker)  # the helper died with its tool


def test_a_timeout_kills_the_whole_tool_group() -> None:
    marker = f"sleep {5000 + os.getpid() % 1000}.5"
    with pytest.raises(subprocess.TimeoutExpired):
        run_tool(["sh", "-c", f"{marker} & {marker}; wait"], timeout=1)
    time.sleep(0.2)
    assert not _alive(marker)


def test_huge_output_is_cut_to_its_head_and_tail() -> None:
    script = ("import sys; sys.stdout.write('first line\\n' + 'x' * 200_000_000 "
              "+ '\\nlast line\\n')")
    tool = run_tool([sys.executable, "-c", script], timeout=60)
    assert tool.output.startswith("first line")
    assert tool.output.endswith("last line")
    assert len(tool.output) < 3 * KEPT_OUTPUT_BYTES
    assert "bytes of output cut" in tool.output


def test_memory_limit_ends_the_tool_and_says_so() -> None:
    script = "b = bytearray(3 << 30); print(len(b))"
    tool = run_tool([sys.executable, "-c", script], timeout=60, memory_bytes=1 << 30)
    assert tool.code != 0
    assert tool.accident is not None


# -- 6. cell ids map one to one to files -----------------------------------------------

def test_ids_that_join_alike_keep_their_own_files(tmp_path: Path, cache_copy: Path) -> None:
    assert cell_slug("p__a/b/12.4/sm_80") != cell_slug("p/a__b/12.4/sm_80")
    write_case(tmp_path / "c", "p__a", scale_case(title="passes", variant="b"),
               {"k.cu": SCALE_KERNEL % "2.0f"})
    write_case(tmp_path / "c", "p", scale_case(title="fails", variant="a__b"),
               {"k.cu": SCALE_KERNEL % "undefined_name"})
    run = _run(tmp_path / "c", tmp_path / "out", cache_copy)
    outcomes = {cell_id: cell["outcome"] for cell_id, cell in run.cells().items()}
    assert outcomes == {"p__a/b/12.4/sm_80": "pass", "p/a__b/12.4/sm_80": "fail"}
    saved = [json.loads(p.read_text())["id"] for p in (tmp_path / "out" / "cells").glob("*")]
    assert sorted(saved) == sorted(outcomes)


# -- 7. sources and include folders stay inside the corpus: tests/unit/test_case_reading.py

# -- 13. the provider auto chose is said and recorded ----------------------------------

def test_auto_says_which_provider_it_chose_and_why(tmp_path: Path, cache_copy: Path) -> None:
    write_case(tmp_path / "c", "one", scale_case(title="one", variant="v"),
               {"k.cu": SCALE_KERNEL % "2.0f"})
    run = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--case", "one", *CELL,
                     "--cache", str(cache_copy), "--provider", "auto", out=tmp_path / "out")
    assert run.code == 0, run.output[-2000:]
    info = run.results["run"]
    assert info["provider_choice"].startswith("auto: "), info
    assert f"provider: {info['provider']} ({info['provider_choice']})" in run.output
    for report in ("COMPATIBILITY.md", "report.html"):
        assert info["provider_choice"].split(" (")[0] in (tmp_path / "out" / report).read_text()


def test_a_scripts_stated_reason_stays_its_last_word() -> None:
    """stdout is block-buffered into a file and flushed at exit, after stderr's sys.exit
    reason: the two streams are kept apart so the reason is still the decisive line."""
    from cudamatrix.stages.compile.logs import decisive_line

    script = "import sys; print('{\"report\": 1}'); sys.exit('the reason it failed')"
    tool = run_tool([sys.executable, "-c", script], timeout=60)
    assert tool.code == 1
    assert decisive_line(tool.output) == "the reason it failed"


def test_a_bad_history_or_count_is_refused_before_any_cell_runs(tmp_path: Path) -> None:
    """Issue 43: `run --history BAD` ran every cell, then exited 2 with no reports; a
    history nested 100,000 deep was a RecursionError after the cells; `--history-runs 0`
    kept every run. Each is now refused at once, naming what, with nothing run."""
    write_case(tmp_path / "cases", "k", TWO_COMPILERS_CASE, {"k.cu": ADD_KERNEL})
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"schema": "cudamatrix-history", "runs": [{"finished": 5}]}))
    base = ("run", "--corpus", str(tmp_path / "cases"), "--case", "k", "--toolkit", "13.0",
            "--arch", "sm_80", "--no-gpu")
    for extra, said in ((("--history", str(deep)), "nested deeper than"),
                        (("--history", str(wrong)), "expected a string"),
                        (("--history", "/dev/zero"), "not a regular file"),
                        (("--history-runs", "0"), "must be 1 to 10000")):
        out = tmp_path / f"out-{len(said)}"
        done = cudamatrix(*base, *extra, out=out)
        assert done.code == 2, (extra, done.output[-2000:])
        assert said in done.output and "Traceback" not in done.output, done.output[-2000:]
        assert not (out / "cells").exists() or not any((out / "cells").iterdir())
