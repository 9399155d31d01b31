"""`cudamatrix repro` on genuine records (issue 79, "also noticed"): a torch extension's
record, whose log runs the host compiler by its name (`g++`, as CUDAExtension's build does),
was refused; a record of `run --cache DIR` was refused as "no toolkit this machine made"
unless $CUDAMATRIX_CACHE named DIR (repro had no --cache); and `repro --corpus DIR`, where
cudamatrix.toml already lists DIR, failed with "case id already defined".

Each test writes the record into --out, runs the real `repro` command in this process and,
where the script is the point, runs it in a real shell, the compilers stand-ins that write
their -o file (the unit lane has no compiler)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from conftest import cudamatrix_in_process as cudamatrix
from conftest import write_case

# A compiler's stand-in: each input file a word names (an object) must exist, and its -o
# file is written, as a real compiler and linker would.
FAKE_COMPILER = """#!/bin/sh
out=""
for word in "$@"; do
  if [ "$prev" = "-o" ]; then out="$word"; fi
  case "$word" in *.o) [ "$prev" = "-o" ] || [ -f "$word" ] || { echo "no $word" >&2; exit 3; };;
  esac
  prev="$word"
done
echo built > "$out"
"""
CELL_ID = "ext/v/13.0/sm_80"


def _tool(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(FAKE_COMPILER)
    (folder / name).chmod(0o755)
    return folder / name


def _results(out: Path, frontend: str, *commands: list[str], case: str = "ext",
             variant: str = "v") -> None:
    out.mkdir(parents=True, exist_ok=True)
    log = "\n".join(f"$ {shlex.join(c)}" for c in commands) + "\nerror: it failed"
    (out / "results.json").write_text(json.dumps({
        "schema": "cudamatrix-results", "schema_version": 1,
        "run": {"started": "", "finished": "", "tier": "pr", "provider": "wheels", "host": "",
                "tool_version": "0"},
        "cells": [{"case": case, "variant": variant, "toolkit": "13.0", "arch": "sm_80",
                   "frontend": frontend, "outcome": "fail", "stage": "compile",
                   "stages": [{"stage": "compile", "status": "failed", "log": log}]}]}))


def test_a_torch_extensions_record_runs_its_host_compiler_by_name(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    nvcc = _tool(cache / "toolkits" / "13.0" / "bin", "nvcc")
    work = tmp_path / "recorded" / "artifacts" / "ext" / "objects"  # the record's machine's
    kernel, binding, library = work / "0-k.o", work / "1-b.o", work / "ext.so"
    out = tmp_path / "out"
    _results(out, "torch-extension",
             [str(nvcc), "-ccbin", "g++", "-Iinc", "-c", "k.cu", "-o", str(kernel), "-O3"],
             ["g++", "-fPIC", "-Iinc", "-c", "b.cpp", "-o", str(binding), "-std=c++17"],
             ["g++", "-shared", str(kernel), str(binding), "-L/usr/lib", "-lc10",
              "-o", str(library)])
    run = cudamatrix("repro", CELL_ID, "--out", str(out), cwd=tmp_path,
                     env={"CUDAMATRIX_CACHE": str(cache)})
    assert run.code == 0, run.output
    assert "g++ -fPIC -Iinc -c b.cpp -o 1-b.o -std=c++17" in run.output, run.output
    # The link reads the objects the script built, never the record's.
    assert "g++ -shared 0-k.o 1-b.o -L/usr/lib -lc10 -o ext.so" in run.output, run.output
    assert str(work) not in run.output
    host = tmp_path / "host-bin"
    _tool(host, "g++")
    (out / "tmp").mkdir()
    done = subprocess.run(["sh", "-c", run.output], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, check=False,
                          env={"PATH": f"{host}:/usr/bin:/bin", "TMPDIR": str(out / "tmp")})
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (out / "tmp").glob("*/ext.so")] == ["ext.so"]


def test_a_host_compiler_by_a_path_or_name_outside_the_system_is_still_refused(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    for program in (str(tmp_path / "evil" / "g++"), "./g++", "sh"):
        _results(out, "torch-extension", [program, "-c", "b.cpp", "-o", "b.o"])
        run = cudamatrix("repro", CELL_ID, "--out", str(out), cwd=tmp_path,
                         env={"CUDAMATRIX_CACHE": str(tmp_path / "cache")})
        assert run.code == 2 and "not one compiler's plain command line" in run.output, \
            (program, run.output)


def test_a_record_of_a_run_with_its_own_cache_is_read_with_repro_cache(tmp_path: Path
                                                                      ) -> None:
    own = tmp_path / "ci-cache"
    nvcc = _tool(own / "toolkits" / "13.0" / "bin", "nvcc")
    out = tmp_path / "out"
    _results(out, "nvcc", [str(nvcc), "-c", "k.cu", "-o", "k.o"], case="k")
    elsewhere = {"CUDAMATRIX_CACHE": str(tmp_path / "default-cache")}
    refused = cudamatrix("repro", "k/v/13.0/sm_80", "--out", str(out), cwd=tmp_path,
                         env=elsewhere)
    assert refused.code == 2, refused.output  # not this machine's default cache's toolkit
    run = cudamatrix("repro", "k/v/13.0/sm_80", "--out", str(out), "--cache", str(own),
                     cwd=tmp_path, env=elsewhere)
    assert run.code == 0, run.output
    assert shlex.join([str(nvcc), "-c", "k.cu", "-o", "k.o"]) in run.output


BUILD_CASE = """title = "a build"
[[variant]]
name = "make"
frontend = "build"
  [variant.build]
  commands = ["sh -c 'echo {arch} > built.txt'"]
  outputs = ["*.txt"]
"""


def test_repro_corpus_naming_the_projects_own_case_folder(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", "proj", BUILD_CASE, {})
    (tmp_path / "cudamatrix.toml").write_text('cases = ["cases"]\n')
    out = tmp_path / "out"
    _results(out, "build", case="proj", variant="make")
    for corpus in ("cases", str(tmp_path / "cases"), "./cases/"):
        run = cudamatrix("repro", "proj/make/13.0/sm_80", "--out", str(out), "--corpus",
                         corpus, cwd=tmp_path)
        assert run.code == 0, (corpus, run.output)
        assert "sh -c 'echo sm_80 > built.txt'" in run.output, run.output
