"""A cell's repro line (issue 82, item 5): pasted at the project's root, it reruns its one
cell into a folder of its own, compiled again, and names the project's paths from its root.
A report's line had no --out (run, it replaced the user's 10-cell reports/latest with a
1-cell report), was answered from the compile cache (`fail (0.0s)`, nothing compiled) and
named the CI machine's folders (`--corpus /home/runner/...`)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import cudamatrix
from conftest import cudamatrix_in_process, write_case
from cudamatrix.cli import build_parser
from cudamatrix.commands.selection import options_from
from cudamatrix.config.options import RunOptions
from cudamatrix.config.plan import Cell, cell_slug
from cudamatrix.config.run_flags import repro_arguments
from cudamatrix.record.results import CellResult, RunInfo
from cudamatrix.reports.glance import repro
from cudamatrix.reports.html import html_report
from cudamatrix.reports.markdown import markdown_report

# Where GitHub's hosted and self-hosted runners check a repository out.
CI_ROOT = "/home/runner/work/proj/proj"


def _ci_record() -> RunInfo:
    """The run as a CI job records it, from before the fix: its paths absolute on the
    runner, inside the checkout."""
    return RunInfo(started="", finished="", tier="pr", provider="wheels", host="",
                   tool_version="", repro_folder=CI_ROOT,
                   repro_args=shlex.join(["--corpus", f"{CI_ROOT}/cases", "--matrix",
                                          f"{CI_ROOT}/ci/matrix.toml", "--no-gpu"]))


def test_a_ci_records_repro_has_its_own_out_compiles_again_and_names_paths_from_the_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cell = Cell("saxpy 'x' $(id)", "nvrtc", "13.0", "sm_80", "nvrtc")  # a stranger's case id
    line = repro(cell, _ci_record())
    assert "/home/runner" not in line, line
    # The line, read by the real parser at a copy of the project's root elsewhere.
    root = tmp_path / "proj"
    (root / "cases").mkdir(parents=True)
    monkeypatch.chdir(root)
    words = shlex.split(line)
    assert words[:2] == ["cudamatrix", "run"], line
    options = options_from(build_parser().parse_args(words[1:]))
    assert options.out == Path("reports/repro") / cell_slug(cell.id), line
    assert options.out != RunOptions().out
    assert options.compile_cache is False, line  # compiled again, not answered from it
    assert [p.resolve() for p in options.corpus] == [root / "cases"], line
    assert options.matrix.resolve() == root / "ci" / "matrix.toml", line
    assert options.cell_ids == (cell.id,) and options.archs == ("sm_80",), line
    # Every report that prints it shows the line, and none names the runner's folders.
    result = CellResult.from_dict({
        "case": cell.case, "variant": cell.variant, "toolkit": cell.toolkit, "arch": cell.arch,
        "frontend": cell.frontend, "outcome": "fail", "stage": "compile", "message": "error",
        "stages": [{"stage": "compile", "status": "failed", "message": "error"}]})
    for report in (markdown_report(_ci_record(), [result]),
                   html_report(_ci_record(), [result])):
        assert "/home/runner" not in report
    assert "project's root (`proj`" in markdown_report(_ci_record(), [result])


def test_a_path_outside_the_project_is_named_from_home_or_as_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a folder inside the project: its paths are named from the project's root;
    one outside it under the home of the machine that ran from `~` (the shell reading it
    as the reader's own home), one elsewhere as it is; only a path's `~` is left to the
    shell, no word of a stranger's."""
    home, root, elsewhere = tmp_path / "home", tmp_path / "home" / "proj", tmp_path / "opt"
    for folder in (root / "cases", root / "sub", home / "cache", elsewhere):
        folder.mkdir(parents=True)
    monkeypatch.chdir(root / "sub")
    monkeypatch.setenv("HOME", str(home))  # the machine that ran
    options = RunOptions(corpus=(Path("../cases"), elsewhere), cache=home / "cache",
                         gpu=False)
    words = repro_arguments(options, root)
    assert words == ["--corpus", "cases", "--corpus", str(elsewhere), "--cache", "~/cache",
                     "--no-gpu"], words
    info = RunInfo(started="", finished="", tier="pr", provider="wheels", host="",
                   tool_version="", repro_args=shlex.join(words), repro_folder=str(root))
    marker = tmp_path / "ran"
    cell = Cell(f"~/x$(touch {marker})", "v", "13.0", "sm_80", "nvrtc")
    line = repro(cell, info)
    said = subprocess.run(["sh", "-c", line.replace("cudamatrix run", "printf '%s\\n'", 1)],
                          env={**os.environ, "HOME": "/reader"}, capture_output=True,
                          text=True, check=True).stdout.splitlines()
    assert not marker.exists()
    assert said[said.index("--cache") + 1] == "/reader/cache", said
    assert said[said.index("--cell") + 1] == cell.id, said


# A CUDA 13.0 install as the host provider reads one (tests/unit/test_declared_keys.py's),
# its nvcc a stand-in that answers its version and fails every compile as a real one
# would, counting each: whether a cell was compiled again is the count, not a timing.
NVCC = """#!/bin/sh
case "$*" in *--version*) echo 'Cuda compilation tools, release 13.0, V13.0.88'; exit 0;; esac
case "$*" in *-gencode*) echo compiled >> "{count}";; esac
echo 'k.cu(1): error: identifier "undefined_name" is undefined' >&2
exit 1
"""
CASE = """title = "does not compile"
[[variant]]
name = "nvcc"
source = "k.cu"
frontend = "nvcc"
"""


def _toolkit(folder: Path, count: Path) -> Path:
    for tool in ("nvcc", "ptxas"):
        path = folder / "bin" / tool
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(NVCC.format(count=count))
        path.chmod(0o755)
    (folder / "lib64").mkdir()
    (folder / "lib64" / "libnvrtc.so.13").write_bytes(b"")
    (folder / "include").mkdir()
    (folder / "include" / "cuda_runtime.h").write_text("#pragma once\n")
    return folder


def _compiles(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_the_printed_repro_leaves_the_users_report_and_compiles_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    count = tmp_path / "compiles"
    monkeypatch.setenv("CUDA_HOME", str(_toolkit(tmp_path / "cuda", count)))
    project = tmp_path / "proj"
    write_case(project / "cases", "broken", CASE,
               {"k.cu": 'extern "C" __global__ void k(float* x) { x[0] = undefined_name; }\n'})
    (project / "cudamatrix.toml").write_text('cases = ["cases"]\n')
    run = cudamatrix_in_process("run", "--provider", "host", "--toolkit", "13.0", "--arch",
                                "sm_80", "--arch", "sm_90", "--no-gpu", cwd=project)
    assert run.code == 1, run.output[-2000:]
    latest = project / "reports" / "latest"
    before = {p.relative_to(latest): p.read_bytes() for p in latest.rglob("*") if p.is_file()}
    assert len(json.loads(before[Path("results.json")])["cells"]) == 2
    compiled = _compiles(count)
    assert compiled >= 1
    lines = re.findall(r"- Repro: `(cudamatrix run [^`]+)`",
                       (latest / "COMPATIBILITY.md").read_text())
    assert len(lines) == 2, lines
    # Pasted into a shell at the project's root, `cudamatrix` this package.
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "cudamatrix").write_text(
        f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(Path(cudamatrix.__file__).parents[1]))} "
        f"exec {shlex.quote(sys.executable)} -m cudamatrix \"$@\"\n")
    (tools / "cudamatrix").chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "CI": "1"}
    for again in range(2):  # twice: no earlier repro into its folder stands for it
        done = subprocess.run(lines[0], shell=True, cwd=project, env=env, text=True,
                              capture_output=True, timeout=300, check=False)
        assert done.returncode == 1, (lines[0], done.stdout[-2000:], done.stderr[-2000:])
        assert _compiles(count) == compiled + 1 + again, (lines[0], done.stdout[-2000:])
    after = {p.relative_to(latest): p.read_bytes() for p in latest.rglob("*") if p.is_file()}
    assert after == before, sorted(set(after) ^ set(before))
    own = project / "reports" / "repro" / cell_slug("broken/nvcc/13.0/sm_80")
    cells = json.loads((own / "results.json").read_text())["cells"]
    assert [c["id"] for c in cells] == ["broken/nvcc/13.0/sm_80"]
    assert cells[0]["outcome"] == "fail" and cells[0]["stage"] == "compile"
