"""Each GPU fault diagnosed by what it is (issue 60, point 2), judged again from the
records of real faults on an H100 (tests/data/gpu-faults through a GPU server and through a
context per cell, bench/evidence/final-h100 and bench/evidence/kernel-time-h100), and
from the published run's launch faults (too many resources, no kernel image, PTX newer than
the driver): a kernel's own assert is the kernel's check, with its file, line and condition,
never "a toolchain bug"; an illegal address, a trap, each a rule of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.config.corpus import load_corpus
from cudamatrix.config.defaults import KNOWN_BUGS
from cudamatrix.record.results import load_results
from cudamatrix.record.verdict import rejudge

REPO = Path(__file__).resolve().parents[2]
EVIDENCE = REPO / "bench" / "evidence"  # the runs kept as evidence of past changes
FAULT_RUNS = [EVIDENCE / "final-h100" / "faults-server" / "results.json",
              EVIDENCE / "final-h100" / "faults-per-cell" / "results.json",
              EVIDENCE / "kernel-time-h100" / "faults" / "server" / "results.json",
              EVIDENCE / "kernel-time-h100" / "faults" / "per-cell" / "results.json"]
FAULT_RULES = {"assert": "device-assert", "illegal-address": "illegal-address",
               "trap": "kernel-trap", "never-returns": "timeout"}


@pytest.mark.parametrize("record", FAULT_RUNS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_recorded_fault_has_its_own_rule(record: Path) -> None:
    _, results = load_results(record)
    cases = {c.id: c for c in load_corpus([REPO / "tests" / "data" / "gpu-faults"])}
    judged = {r.cell.variant: r for r in rejudge(results, cases)}
    for variant, rule in FAULT_RULES.items():
        diagnosis = judged[variant].diagnosis or {}
        assert diagnosis.get("rule") == rule, (variant, diagnosis)
    said = judged["assert"].diagnosis or {}
    assert said["title"] == ("The kernel's own check failed: assert(x[threadIdx.x] > 100.0f) "
                             "at faults.cu:21")
    assert "a toolchain bug" not in said["explanation"] and "upstream" not in said["fix"]
    for variant, result in judged.items():
        if variant.startswith("good"):
            assert result.outcome == "pass" and not result.diagnosis, variant


def test_the_published_runs_launch_faults_keep_their_rules() -> None:
    _, results = load_results(REPO / "reports" / "results.json")
    cases = {c.id: c for c in load_corpus([KNOWN_BUGS])}
    judged = {r.cell.id: r for r in rejudge(results, cases)}
    expected = {"launch-limits/registers-1024-threads/13.0/sm_90": "launch-out-of-resources",
                "launch-limits/sm80-cubin-only/13.0/sm_80": "no-kernel-image",
                "ptx-driver-jit/ptx-only/13.5/sm_90": "ptx-newer-than-driver"}
    for cell_id, rule in expected.items():
        assert (judged[cell_id].diagnosis or {}).get("rule") == rule, cell_id


def test_a_skip_no_rule_explains_has_no_diagnosis() -> None:
    """Issue 61: a skip said "No rule matched" beside its own reason (a wheel toolkit that
    ships no libcudadevrt for a build); a skip a rule explains keeps its diagnosis."""
    from cudamatrix.config.corpus import Variant
    from cudamatrix.config.plan import Cell
    from cudamatrix.record.verdict import judge
    from cudamatrix.stages.cell.result import StageResult

    cell = Cell("c", "v", "12.4", "sm_80", "build")
    variant = Variant("v", source=Path("."), frontend="build")
    unexplained = [StageResult("compile", "unavailable", "toolkit 12.4 (wheels) ships no "
                               "libcudadevrt.a, which nvcc links a relocatable build with", "")]
    verdict, _, said = judge(cell, variant, unexplained, None, {})
    assert verdict.outcome == "skip" and said is None
    explained = [StageResult("compile", "unavailable", "toolkit 12.9 (wheels) has no nvcc; "
                             "the nvcc frontend needs it", "")]
    verdict, _, said = judge(cell, variant, explained, None, {})
    assert verdict.outcome == "skip" and (said or {}).get("rule") == "toolkit-lacks-tool"
