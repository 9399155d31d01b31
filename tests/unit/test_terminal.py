"""At a terminal (issue 56, point 9): errors and warnings on stderr, so what a command
prints on stdout (plan's and schema's JSON, list's ids) stays clean; -q and -v; a JSON
form of `list`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cudamatrix.config.project import init_project


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cudamatrix", *args], cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=120)


def test_a_bad_case_is_one_line_on_stderr_and_nothing_on_stdout(tmp_path: Path) -> None:
    init_project(tmp_path)
    case = tmp_path / "cudamatrix-cases" / "saxpy" / "case.toml"
    case.write_text(case.read_text().replace('frontend = "nvrtc"', 'frontend = "nvrtcc"'))
    done = _cli("validate", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "nvrtcc" in done.stderr


def test_list_json_names_each_cells_axes(tmp_path: Path) -> None:
    init_project(tmp_path)
    plain = _cli("list", "--toolkit", "13.0", cwd=tmp_path)
    listed = _cli("list", "--toolkit", "13.0", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    cells = json.loads(listed.stdout)
    assert [c["id"] for c in cells] == plain.stdout.split()
    assert {c["toolkit"] for c in cells} == {"13.0"} and {c["arch"] for c in cells} == {
        "sm_80", "sm_90"}


def test_quiet_and_verbose_are_options_of_every_command(tmp_path: Path) -> None:
    init_project(tmp_path)
    for flag in ("-q", "--quiet", "-v", "--verbose"):
        assert _cli("list", flag, cwd=tmp_path).returncode == 0, flag
    both = _cli("list", "-q", "-v", cwd=tmp_path)
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_a_quiet_progress_says_only_what_failed(capsys: object) -> None:
    from cudamatrix.config.plan import Cell
    from cudamatrix.orchestrator.progress import Progress
    from cudamatrix.record.results import CellResult

    def result(outcome: str) -> CellResult:
        return CellResult(cell=Cell("c", outcome, "13.0", "sm_90", "nvrtc"), outcome=outcome,
                          stage="compile", reached="", message=f"{outcome} said", reason="",
                          expected="", diagnosis=None, stages=(), seconds=0.1)

    for verbosity, shown in ((-1, ["fail"]), (0, ["pass", "fail"]), (1, ["pass", "fail"])):
        progress = Progress()
        progress.verbosity = verbosity
        progress.start(2)
        progress.note("preparing toolkit 13.0")
        progress.cell_done(result("pass"))
        progress.cell_done(result("fail"))
        out = capsys.readouterr().out  # type: ignore[attr-defined]
        assert [line.split(": ")[1].split()[0] for line in out.splitlines()
                if line.startswith("[")] == shown, out
        assert ("preparing toolkit" in out) == (verbosity >= 0)
        # Issue 70: a failing cell's line says why at every verbosity (a CI log's -v is
        # never there when it is read).
        assert "fail (0.1s): fail said\n" in out
