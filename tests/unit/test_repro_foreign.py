"""A record from elsewhere is data (issue 68, items 2 and 3): `cudamatrix repro ID | sh` of
a downloaded results.json runs no command the record wrote and writes nowhere the record
names. A build cell's script comes from the case as it is here (its commands, its
environment: never the record's BASH_ENV, LD_PRELOAD or PATH), or the record is refused
in one line where its case is not here; a compile's nvcc words hold nothing nvcc's own
/bin/sh would expand, and every file a compile writes lands in the script's own folder.

Each test writes a hostile results.json into --out, runs the real `repro` command in this
process and the script it printed in a real shell; the nvcc it names is a stand-in placed
in the cudamatrix cache that does what nvcc does with its words (hands them to /bin/sh
inside double quotes, writes its -o file)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from conftest import Run, one_line_error, write_case
from conftest import cudamatrix_in_process as cudamatrix

# What nvcc does with its words: each goes into a /bin/sh command line inside double
# quotes (as nvcc runs cicc, ptxas and the host compiler), and -o FILE is written.
FAKE_NVCC = """#!/bin/sh
out=""
for word in "$@"; do
  if [ "$prev" = "-o" ] || [ "$prev" = "-MF" ]; then out="$out $word"; fi
  prev="$word"
  /bin/sh -c "true \\"$word\\""
done
for file in $out; do echo built > "$file"; done
"""


def _nvcc(cache: Path) -> Path:
    """A stand-in nvcc inside a toolkit of the cudamatrix cache (where repro allows one)."""
    nvcc = cache / "toolkits" / "13.0" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text(FAKE_NVCC)
    nvcc.chmod(0o755)
    return nvcc


def _results(out: Path, cell: dict[str, object]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({
        "schema": "cudamatrix-results", "schema_version": 1,
        "run": {"started": "", "finished": "", "tier": "pr", "provider": "wheels", "host": "",
                "tool_version": "0"},
        "cells": [cell]}))


def _cell(case: str, variant: str, frontend: str, compile_stage: dict[str, object]
          ) -> dict[str, object]:
    return {"case": case, "variant": variant, "toolkit": "13.0", "arch": "sm_80",
            "frontend": frontend, "outcome": "fail", "stage": "compile",
            "stages": [{"stage": "compile", "status": "failed", **compile_stage}]}


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _sh(script: str, tmp_path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """The printed script in a real shell, its temporary folders under --out."""
    (out / "tmp").mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(out / "tmp"), "HOME": str(tmp_path)}
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=60, check=False)


def _refused_inertly(run: Run, tmp_path: Path, out: Path, marker: Path, *words: str) -> str:
    """One line, exit 2, nothing on stdout a pipe to sh could run (in process, stdout and
    stderr are one stream: the one line is all there is); and that nothing ran."""
    line = one_line_error(run, *words)
    assert run.output.strip() == line, run.output
    _sh(run.output, tmp_path, out)
    assert not marker.exists()
    return line


# --- item 2: a build cell's repro ------------------------------------------------------------

def _hostile_build(tmp_path: Path, marker: Path) -> dict[str, object]:
    """A build record whose commands and environment each try to run something."""
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "rc").write_text(f"touch {marker}\n")
    (evil / "cp").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (evil / "cp").chmod(0o755)
    return {"details": {
        "project_path": str(tmp_path / "cases" / "proj"),
        "command_words": [["sh", "-c", f"touch {marker}"]],
        "environment": {"BASH_ENV": str(evil / "rc"), "ENV": str(evil / "rc"),
                        "LD_PRELOAD": str(evil / "x.so"), "PATH": f"{evil}:/usr/bin:/bin"}}}


def test_a_foreign_build_record_whose_case_is_not_here_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    out = tmp_path / "out"
    _results(out, _cell("proj", "make", "build", _hostile_build(tmp_path, marker)))
    run = cudamatrix("repro", "proj/make/13.0/sm_80", "--out", str(out), cwd=tmp_path)
    _refused_inertly(run, tmp_path, out, marker, "proj", "not here")


BUILD_CASE = """title = "a build"
[[variant]]
name = "make"
frontend = "build"
  [variant.build]
  commands = ["sh -c 'echo {arch} > built.txt'"]
  outputs = ["*.txt"]
  env = { GREETING = "hello {cuda_arch}" }
"""


def test_a_build_cells_repro_runs_the_case_here_not_the_records_words(tmp_path: Path) -> None:
    """The case is here (--corpus): its own commands run, with what the tool sets from the
    cell (arch, the toolkit's folder, checked to be the cache's), never the record's
    commands, BASH_ENV, LD_PRELOAD or PATH."""
    marker = tmp_path / "marker"
    cases = tmp_path / "cases"
    write_case(cases, "proj", BUILD_CASE, {})
    cache = tmp_path / "cache"
    nvcc = _nvcc(cache)
    out = tmp_path / "out"
    record = _hostile_build(tmp_path, marker)
    record["details"]["environment"]["CUDA_HOME"] = str(nvcc.parent.parent)  # type: ignore[index]
    _results(out, _cell("proj", "make", "build", record))
    run = cudamatrix("repro", "proj/make/13.0/sm_80", "--out", str(out), "--corpus", str(cases),
                     cwd=tmp_path, env={"CUDAMATRIX_CACHE": str(cache)})
    assert run.code == 0, run.output
    for word in ("BASH_ENV", "LD_PRELOAD", str(tmp_path / "evil"), "touch"):
        assert word not in run.output, (word, run.output)
    assert "export CUDAARCHS=80" in run.output
    assert f"export CUDA_HOME={nvcc.parent.parent}" in run.output
    assert "export GREETING='hello 80'" in run.output
    before = _files(tmp_path)
    done = _sh(run.output, tmp_path, out)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    made = {p for p, data in _files(tmp_path).items() if before.get(p) != data}
    assert made and all(p.startswith(str(out) + "/") for p in made), made
    assert any(p.endswith("/built.txt") for p in made), made


def test_a_build_record_naming_a_toolkit_outside_the_cache_is_refused(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    write_case(cases, "proj", BUILD_CASE, {})
    out = tmp_path / "out"
    marker = tmp_path / "marker"
    record = _hostile_build(tmp_path, marker)
    record["details"]["environment"]["CUDA_HOME"] = str(tmp_path / "evil")  # type: ignore[index]
    _results(out, _cell("proj", "make", "build", record))
    run = cudamatrix("repro", "proj/make/13.0/sm_80", "--out", str(out), "--corpus", str(cases),
                     cwd=tmp_path, env={"CUDAMATRIX_CACHE": str(tmp_path / "cache")})
    _refused_inertly(run, tmp_path, out, marker, "CUDA_HOME")


# --- item 3: a compile's nvcc line -----------------------------------------------------------

def _compile_record(*words: str) -> dict[str, object]:
    return {"log": f"$ {shlex.join(words)}\nerror"}


def test_a_word_nvccs_shell_would_expand_is_refused_naming_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    nvcc = _nvcc(cache)
    for number, word in enumerate(["-DFOO=$(touch {m})", "-DFOO=`touch {m}`",
                                   '-DFOO="x`touch {m}`"', "-DFOO=\\$(touch {m})"]):
        marker = tmp_path / f"marker{number}"
        out = tmp_path / f"out{number}"
        said = word.format(m=marker)
        _results(out, _cell("k", "v", "nvcc", _compile_record(str(nvcc), said, "-c", "k.cu")))
        run = cudamatrix("repro", "k/v/13.0/sm_80", "--out", str(out), cwd=tmp_path,
                         env={"CUDAMATRIX_CACHE": str(cache)})
        _refused_inertly(run, tmp_path, out, marker, "stages[compile].log", "-DFOO=",
                         "nvcc's own /bin/sh")


def test_a_records_output_paths_write_only_into_the_scripts_own_folder(tmp_path: Path
                                                                     ) -> None:
    cache = tmp_path / "cache"
    nvcc = _nvcc(cache)
    victim = tmp_path / "home" / ".bashrc"
    victim.parent.mkdir()
    victim.write_text("precious\n")
    depends = tmp_path / "elsewhere" / "deps.d"
    out = tmp_path / "out"
    _results(out, _cell("k", "v", "nvcc", _compile_record(
        str(nvcc), "-c", "-o", str(victim), "-MF", str(depends), "k.cu")))
    run = cudamatrix("repro", "k/v/13.0/sm_80", "--out", str(out), cwd=tmp_path,
                     env={"CUDAMATRIX_CACHE": str(cache)})
    assert run.code == 0, run.output
    assert str(victim) not in run.output and str(depends) not in run.output, run.output
    before = _files(tmp_path)
    done = _sh(run.output, tmp_path, out)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "precious\n"
    assert not depends.parent.exists()
    made = {p for p, data in _files(tmp_path).items() if before.get(p) != data}
    assert made and all(p.startswith(str(out) + "/") for p in made), made
    assert any(p.endswith("/.bashrc") for p in made), made


def test_an_output_folder_or_a_pass_through_output_is_kept_inside(tmp_path: Path) -> None:
    """A folder option points into the script's folder; an output option handed on to the
    host compiler or linker (-Xcompiler -o, -Wl,-Map=) is refused, naming it; an options
    file (nvcc's -optf, a compiler's @file) would carry words nothing checked."""
    cache = tmp_path / "cache"
    nvcc = _nvcc(cache)
    out = tmp_path / "out"
    _results(out, _cell("k", "v", "nvcc", _compile_record(
        str(nvcc), "-c", "--output-directory", str(tmp_path / "away"), "--keep-dir=/etc",
        "k.cu")))
    run = cudamatrix("repro", "k/v/13.0/sm_80", "--out", str(out), cwd=tmp_path,
                     env={"CUDAMATRIX_CACHE": str(cache)})
    assert run.code == 0, run.output
    assert "--output-directory . --keep-dir=. k.cu" in run.output, run.output
    for words, named in ((["-Xcompiler", "-o,/tmp/x"], "-o,/tmp/x"),
                         (["-Xlinker", "-Map=/tmp/x"], "-Map=/tmp/x"),
                         (["-Xcompiler", "-MF", "-Xcompiler", "/tmp/x"], "-MF"),
                         (["-optf", "/tmp/opts"], "-optf"), (["-Xcompiler", "@/tmp/o"], "@/tmp/o"),
                         (["--run"], "running no other program")):
        _results(out, _cell("k", "v", "nvcc", _compile_record(str(nvcc), *words, "k.cu")))
        run = cudamatrix("repro", "k/v/13.0/sm_80", "--out", str(out), cwd=tmp_path,
                         env={"CUDAMATRIX_CACHE": str(cache)})
        _refused_inertly(run, tmp_path, out, tmp_path / "marker", named)
    assert not (tmp_path / "away").exists() and os.listdir(tmp_path / "cache")
