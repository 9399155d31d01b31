"""Issue 82, item 3: a failing cell's log line carries the reason the tool knows. NVRTC over
48 KiB of static shared memory says only `nvrtcCompileProgram returned
NVRTC_ERROR_COMPILATION`, and that was the CI log's whole line, although the diagnosis knew
why (NVRTC refuses silently; ptxas's usage has the bytes). Where the decisive message is a
bare status, the line adds the diagnosis' title; where the compiler said why, its words are
the line. Real records (the published run's smem-oversize cell), diagnosed by the real
rules."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from cudamatrix.commands.progress_bar import RichProgress
from cudamatrix.orchestrator.progress import Progress
from cudamatrix.record.diagnose import diagnose_stage
from cudamatrix.record.results import CellResult, load_results

REPO = Path(__file__).resolve().parents[2]
SMEM_CELL = "smem-oversize/static-0xc010/13.0/sm_80"
PTXAS = ("ptxas error   : Entry function 'tiled_matmul' uses too much shared data "
         "(0xc010 bytes, 0xc000 max)")


def _failed(message: str | None = None) -> CellResult:
    """The published cell NVRTC refused with NVRTC_ERROR_COMPILATION, as a failure no case
    expects (a user's kernel), diagnosed as a run diagnoses it now."""
    _, results = load_results(REPO / "reports" / "results.json")
    cell = next(r for r in results if r.cell.id == SMEM_CELL)
    stage = cell.stages[0] if message is None else replace(cell.stages[0], message=message,
                                                           log=message)
    said = stage.message
    return replace(cell, outcome="fail", message=said, stages=(stage,),
                   diagnosis=diagnose_stage(said, stage).to_dict())


def _line(progress: Progress, result: CellResult, capsys: pytest.CaptureFixture[str]) -> str:
    progress.heartbeat_s = 0
    progress.start(1)
    progress.cell_done(result)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_bare_status_line_carries_what_the_diagnosis_knows(
        capsys: pytest.CaptureFixture[str]) -> None:
    result = _failed()
    assert result.message == "error: nvrtcCompileProgram returned NVRTC_ERROR_COMPILATION"
    line = _line(Progress(), result, capsys)
    assert line.startswith(f"[1/1] {SMEM_CELL}: fail (")
    assert line.endswith(f": {result.message} — {(result.diagnosis or {})['title']}")
    assert "49,168 bytes of static shared memory" in line


def test_a_compilers_own_reason_is_the_line_alone(capsys: pytest.CaptureFixture[str]) -> None:
    result = _failed(PTXAS)
    assert (result.diagnosis or {}).get("rule") == "static-smem-over-limit"
    assert _line(Progress(), result, capsys).endswith(f"): {PTXAS}")


def test_the_terminals_line_carries_it_too() -> None:
    screen = io.StringIO()
    bar = RichProgress(Console(file=screen, width=300, highlight=False, markup=False,
                               soft_wrap=True))
    bar.start(1)
    bar.cell_done(_failed())
    bar.finish()
    said = [line for line in screen.getvalue().splitlines() if SMEM_CELL in line]
    assert said and "49,168 bytes of static shared memory" in said[0], screen.getvalue()
