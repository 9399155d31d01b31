"""A repro script is data made inert (issue 57, rule 1): `cudamatrix repro ID | sh` on a
record from elsewhere runs one toolkit compiler's command or nothing. A value of the record
with a newline stays inside the comment; the NVRTC driver runs on this tool's Python with
-P, so the artifacts folder it runs in can plant no module; an option that makes a compiler
run a program, or a compiler from outside a toolkit, refuses the record; an unknown
frontend is one line; a refusal prints nothing on stdout, so a pipe to sh runs nothing."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cudamatrix.commands.repro import compile_script
from cudamatrix.config.plan import Cell
from cudamatrix.errors import UserError
from cudamatrix.record.results import CellResult, save_cell
from cudamatrix.stages.cell.result import StageResult

NVCC = "/usr/bin/nvcc"  # a system toolkit's path: the place is checked, not the file


def _record(*commands: str, case: str = "k", frontend: str = "nvcc") -> CellResult:
    log = "\n".join(f"$ {c}" for c in commands)
    return CellResult(cell=Cell(case, "v", "13.0", "sm_90", frontend), outcome="fail",
                      stage="compile", reached="", message="", reason="", expected="",
                      diagnosis=None, stages=(StageResult("compile", "fail", log=log),),
                      seconds=0.1)


def test_a_newline_in_a_recorded_value_stays_in_the_comment(tmp_path: Path) -> None:
    script = compile_script(_record(shlex.join([NVCC, "-c", "k.cu"]),
                                    case="k\ntouch /tmp/pwned\n#"), tmp_path)
    lines = script.splitlines()
    assert lines[1].startswith("# k touch /tmp/pwned #")  # folded by log_line
    assert not any(line.startswith(("touch", "#/v")) for line in lines[2:]), script


def test_the_nvrtc_driver_runs_on_this_python_with_no_folder_on_its_path(tmp_path: Path
                                                                         ) -> None:
    planted = "/home/someone/evil/python3"
    line = shlex.join([planted, "-m", "cudamatrix.stages.compile.nvrtc", "lib.so", "k.cu"])
    script = compile_script(_record(line, frontend="nvrtc"), tmp_path)
    assert shlex.join([sys.executable, "-P", "-m", "cudamatrix.stages.compile.nvrtc"]) in script
    assert planted not in script


@pytest.mark.parametrize("words", [
    [NVCC, "-Xcompiler", "-wrapper", "-Xcompiler", "/bin/sh,-c,touch /tmp/pwned", "-c", "k.cu"],
    [NVCC, "-Xcompiler=-wrapper,/bin/sh,-c,id", "-c", "k.cu"],
    [NVCC, "-Xcompiler", "-B/tmp/evil", "-c", "k.cu"],
    [NVCC, "-Xcompiler", "-fplugin=/tmp/evil.so", "-c", "k.cu"],
    [NVCC, "-ccbin", "/tmp/evil/g++", "-c", "k.cu"],
    [NVCC, "--compiler-bindir=/tmp/evil", "-c", "k.cu"],
    [NVCC, "-Xlinker", "-plugin=/tmp/evil.so", "-c", "k.cu"],
    ["/tmp/evil/nvcc", "-c", "k.cu"],
    ["LD_LIBRARY_PATH=/tmp/evil", NVCC, "-c", "k.cu"],
], ids=["wrapper", "wrapper-joined", "B", "plugin", "ccbin-path", "bindir", "linker-plugin",
        "program-outside", "library-path-outside"])
def test_a_compiler_option_that_runs_a_program_refuses_the_record(words: list[str],
                                                                  tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not printed as a script"):
        compile_script(_record(shlex.join(words)), tmp_path)


def test_a_host_compiler_by_name_is_kept(tmp_path: Path) -> None:
    script = compile_script(_record(shlex.join([NVCC, "-ccbin", "g++-11", "-c", "k.cu"])),
                            tmp_path)
    assert "-ccbin g++-11" in script


def test_an_unknown_frontend_and_a_refusal_print_nothing_a_shell_would_run(tmp_path: Path
                                                                          ) -> None:
    with pytest.raises(UserError, match="frontend 'nosuch'"):
        compile_script(_record(shlex.join([NVCC, "-c", "k.cu"]), frontend="nosuch"), tmp_path)
    hostile = _record(shlex.join(["/tmp/evil/nvcc", "-c", "k.cu"]), case="k\nid")
    save_cell(tmp_path, hostile)
    done = subprocess.run([sys.executable, "-m", "cudamatrix", "repro", hostile.cell.id,
                           "--out", str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr


def _build_record(details: dict[str, object]) -> CellResult:
    return CellResult(cell=Cell("b", "v", "13.0", "sm_90", "build"), outcome="fail",
                      stage="compile", reached="", message="", reason="", expected="",
                      diagnosis=None, stages=(StageResult("compile", "failed", details=details),),
                      seconds=0.1)


def test_a_build_cells_script_never_holds_the_records_words_or_values(tmp_path: Path
                                                                      ) -> None:
    """A build cell's script comes from its case as it is here (tests/unit/
    test_repro_foreign.py): a record's own commands and environment, quoted or not, are
    never printed; without the case here the record is refused in one line."""
    record = _build_record({"project_path": str(tmp_path / "p q"),
                            "command_words": [["make", "ARCH=sm_90; touch /tmp/pwned"]],
                            "environment": {"CUDAARCHS": "90", "X": "$(touch /tmp/pwned)"}})
    for details in (record, _build_record({})):
        with pytest.raises(UserError, match="is not here") as caught:
            compile_script(details, tmp_path)
        assert "pwned" not in str(caught.value) and "\n" not in str(caught.value)
