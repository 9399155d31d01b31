"""Issue 82, item 4: a pass without a GPU means "compiled", and nothing said so. A run on a
machine without a GPU (or with --no-gpu) compiles each cell and checks its PTX and SASS;
its load and run are skipped, and the cell passes: `pass=20` read as twenty kernels run.
The summary line, COMPATIBILITY.md and report.html now say which passes were only
compiled, and why. Real records: a --no-gpu run kept as evidence, and the published H100
run (four passes whose cubin that GPU could not run)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO, cudamatrix_in_process
from cudamatrix.record.results import load_results

# A run made with --no-gpu: 20 of its cells passed, compiled and audited, none loaded.
NO_GPU_RUN = REPO / "bench" / "evidence" / "library-headers-h100" / "wheels" / "results.json"
PUBLISHED = REPO / "reports" / "results.json"
# A GPU run where every pass loaded and ran.
RAN = REPO / "bench" / "evidence" / "realworld-h100" / "results.json"


def _summary(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("pass="))


def test_the_summary_line_says_the_passes_were_only_compiled(tmp_path: Path) -> None:
    _, results = load_results(NO_GPU_RUN)
    assert sum(r.outcome == "pass" for r in results) == 20
    run = cudamatrix_in_process("report", str(NO_GPU_RUN), "--out", str(tmp_path / "r"))
    assert _summary(run.output).startswith("pass=20 (20 compiled only: no GPU) xfail="), \
        run.output


def test_the_markdown_and_the_page_say_it_with_the_runs_reason(tmp_path: Path) -> None:
    cudamatrix_in_process("report", str(NO_GPU_RUN), "--out", str(tmp_path / "r"))
    markdown = (tmp_path / "r" / "COMPATIBILITY.md").read_text()
    assert "20 as expected (20 compiled only: no GPU)" in markdown
    assert ("Compiled only: 20 of the 20 passing cells were compiled and their PTX and SASS "
            "checked, never loaded or run (no GPU: GPU stages turned off (--no-gpu)): such "
            "a pass says the code builds, not that it runs.") in markdown.splitlines()
    page = (tmp_path / "r" / "report.html").read_text()
    assert re.search(r'pass: 20</span> <span class="muted" id="compiled-only">'
                     r'\(20 compiled only: no GPU\)</span>', page)
    assert '<p class="muted" id="compiled-note">Compiled only: 20 of the 20' in page


def test_a_gpu_run_names_the_passes_its_gpu_could_not_load() -> None:
    from cudamatrix.reports.glance import CompiledOnly, compiled_only

    _, results = load_results(PUBLISHED)
    compiled = CompiledOnly.of(results)
    assert sum(compiled_only(r) == "no GPU" for r in results) == 0
    assert compiled.count == 4 and compiled.passes == 108
    assert compiled.said() == ("4 compiled only: 3 no PTX to JIT and a sm_90a cubin cannot "
                               "run on sm_90, 1 no PTX to JIT and a sm_90 cubin cannot run "
                               "on sm_90")


def test_a_run_whose_passes_all_ran_says_nothing_more(tmp_path: Path) -> None:
    _, results = load_results(RAN)
    assert any(r.outcome == "pass" for r in results)
    run = cudamatrix_in_process("report", str(RAN), "--out", str(tmp_path / "r"))
    assert "compiled only" not in run.output
    assert "Compiled only" not in (tmp_path / "r" / "COMPATIBILITY.md").read_text()
