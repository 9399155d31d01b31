"""Issue 82, item 3: a failing cell's one line (the CI log's, -v's, the terminal's) says
what the run found, not only what the compiler printed. NVRTC over 48 KiB of static
shared memory prints a bare NVRTC_ERROR_COMPILATION; the bytes were only in ptxas's usage
line in the log, so the line now names them. A compile that fails for an arch whose name
the run found declared from a newer arch on said only `identifier ... is undefined`; the
line now says the finding first, the compiler's words after. Real records
(tests/data/logs, captured from real NVRTC 13.0 runs), diagnosed by the real rules."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from cudamatrix.commands.progress_bar import RichProgress
from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.progress import Progress
from cudamatrix.record.diagnose import DIAGNOSED_LOG_CHARS, diagnose_stage
from cudamatrix.record.results import CellResult
from cudamatrix.stages.cell.result import StageResult

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
SMEM_SAMPLE = "nvrtc-refused-silently-2.json"  # __shared__ char s[49168], NVRTC 13.0, sm_80
SINCE_SAMPLE = "compiles-from-newer-arch.json"  # dequant from sm_80 on, NVRTC 13.0, sm_75


def _failed(sample_name: str, log: str | None = None) -> CellResult:
    """The sample's cell as a failure no case expects, diagnosed as a run diagnoses it."""
    sample = json.loads((LOGS / sample_name).read_text())
    fields = dict(sample["stage"])
    if log is not None:
        fields["log"] = log
    stage = StageResult(**fields)
    case, variant, toolkit, arch = sample["cell"].split("/")
    return CellResult(cell=Cell(case, variant, toolkit, arch, "nvrtc"), outcome="fail",
                      stage="compile", reached="compile", message=sample["message"],
                      reason="", expected="", stages=(stage,), seconds=0.5,
                      diagnosis=diagnose_stage(sample["message"], stage).to_dict())


def _line(result: CellResult, capsys: pytest.CaptureFixture[str]) -> str:
    progress = Progress()
    progress.heartbeat_s = 0
    progress.start(1)
    progress.cell_done(result)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _terminal_line(result: CellResult) -> str:
    screen = io.StringIO()
    bar = RichProgress(Console(file=screen, width=400, highlight=False, markup=False,
                               soft_wrap=True))
    bar.start(1)
    bar.cell_done(result)
    bar.finish()
    said = [line for line in screen.getvalue().splitlines() if result.cell.id in line]
    assert said, screen.getvalue()
    return said[0]


def test_the_silent_nvrtc_refusal_names_the_bytes_from_ptxas_usage(
        capsys: pytest.CaptureFixture[str]) -> None:
    result = _failed(SMEM_SAMPLE)
    assert result.message == "error: nvrtcCompileProgram returned NVRTC_ERROR_COMPILATION"
    line = _line(result, capsys)
    assert line == (
        "[1/1] smem49168/static/13.0/sm_80: fail (0.5s): "
        "error: nvrtcCompileProgram returned NVRTC_ERROR_COMPILATION — NVRTC refused the "
        "program silently: 49,168 bytes of static shared memory, over the 48 KiB (49,152) a "
        "block may have without opting in (dynamic shared memory and cudaFuncSetAttribute)")
    assert "49,168 bytes of static shared memory" in _terminal_line(result)


def test_the_largest_kernels_bytes_are_said_and_a_log_without_them_says_the_rule_alone(
        capsys: pytest.CaptureFixture[str]) -> None:
    sample = json.loads((LOGS / SMEM_SAMPLE).read_text())
    usage = "ptxas info    : Used 9 registers, used 1 barriers, 49168 bytes smem"
    small = "ptxas info    : Used 4 registers, 1024 bytes smem, 364 bytes cmem[0]"
    # A small kernel after the big one: the figure over the limit is the cause.
    two_kernels = sample["stage"]["log"].replace(usage, f"{usage}\n{small}")
    assert "49,168 bytes" in _line(_failed(SMEM_SAMPLE, two_kernels), capsys)
    # No usage over 48 KiB (or none at all): no figure is made up, the rule's title stays.
    for log in (sample["stage"]["log"].replace("49168 bytes smem", "1024 bytes smem"),
                sample["message"]):
        title = (_failed(SMEM_SAMPLE, log).diagnosis or {})["title"]
        assert title.startswith("NVRTC refused the program without an error message")


def test_the_figure_is_read_within_the_logs_bound() -> None:
    sample = json.loads((LOGS / SMEM_SAMPLE).read_text())
    # A usage line before the log's last DIAGNOSED_LOG_CHARS is not read, as no rule reads
    # there: the diagnosis of a stranger's huge log stays bounded.
    far = ("ptxas info    : Used 9 registers, 70000 bytes smem\n"
           + ("x" * 79 + "\n") * (DIAGNOSED_LOG_CHARS // 80 + 1)
           + sample["stage"]["log"].replace("49168 bytes smem", "1024 bytes smem"))
    title = (_failed(SMEM_SAMPLE, far).diagnosis or {})["title"]
    assert title.startswith("NVRTC refused the program without an error message"), title


def test_a_since_arch_finding_comes_first_on_the_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    result = _failed(SINCE_SAMPLE)
    assert (result.diagnosis or {})["rule"] == "compiles-from-newer-arch"
    line = _line(result, capsys)
    assert line == (
        "[1/1] guarded/nvrtc/13.0/sm_75: fail (0.5s): dequant works from sm_80 on: NVRTC "
        "13.0 finds it for sm_80, not for sm_75 — k.cu(2): error: identifier \"dequant\" "
        "is undefined")
    terminal = _terminal_line(result)
    assert terminal.index("dequant works from sm_80 on") < terminal.index("is undefined")
