"""A cell's outcome from its stages and the case's expectation (verdict.decide), as a table:
every rule of verdict.py, each row a cell's stages, what the case expects, and the outcome,
stage and reached stage the reports must say (written out, never computed here)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cudamatrix.config.case_tables import Expectation
from cudamatrix.record.verdict import decide
from cudamatrix.stages.cell.result import StageResult

OK = "ok"


def _stages(*pairs: tuple[str, str]) -> list[StageResult]:
    return [StageResult(stage, status, "" if status == OK else f"{stage} said no",
                        f"error: {stage} said no" if status == "failed" else "")
            for stage, status in pairs]


PASS = Expectation("pass")
FAIL_COMPILE = Expectation("fail", stage="compile")
FAIL_RUN_MATCHING = Expectation("fail", stage="run", match="said no")
FAIL_LOAD_OTHER_WORDS = Expectation("fail", stage="load", match="NO_BINARY")
HANG = Expectation("timeout", stage="run")

ROWS = [
    # every stage ran and passed
    (_stages(("compile", OK), ("inspect", OK), ("load", OK), ("run", OK)), PASS,
     ("pass", "run", "run")),
    # no GPU here: a pass at the stage it passed through, the same in every report
    (_stages(("compile", OK), ("inspect", OK), ("load", "skipped")), PASS,
     ("pass", "inspect", "inspect")),
    # the bug reproduces where the case says
    (_stages(("compile", "failed")), FAIL_COMPILE, ("xfail", "compile", "")),
    (_stages(("compile", OK), ("load", OK), ("run", "failed")), FAIL_RUN_MATCHING,
     ("xfail", "run", "load")),
    # failed at the wrong stage: a failure of its own, never an xfail
    (_stages(("compile", "failed")), Expectation("fail", stage="run"), ("fail", "compile", "")),
    # failed at the right stage in other words
    (_stages(("compile", OK), ("load", "failed")), FAIL_LOAD_OTHER_WORDS,
     ("fail", "load", "compile")),
    # failed where a pass was expected
    (_stages(("compile", OK), ("run", "failed")), PASS, ("fail", "run", "compile")),
    # the expected failure did not happen: possibly fixed upstream
    (_stages(("compile", OK), ("inspect", OK)), FAIL_COMPILE, ("xpass", "compile", "inspect")),
    # an expected failure at a stage that cannot run here: undecided, said
    (_stages(("compile", OK), ("load", "skipped")), FAIL_RUN_MATCHING, ("skip", "load", "compile")),
    # an expected failure at a stage before the skipped one that passed: xpass
    (_stages(("compile", OK), ("inspect", OK), ("load", "skipped")), FAIL_COMPILE,
     ("xpass", "load", "inspect")),
    # the toolkit cannot build the arch, or lacks a tool: skips
    (_stages(("compile", "unsupported")), PASS, ("skip", "compile", "")),
    (_stages(("compile", "unavailable")), PASS, ("skip", "compile", "")),
    # the tool or the environment broke
    (_stages(("compile", "error")), PASS, ("error", "compile", "")),
    (_stages(("compile", "crashed")), FAIL_COMPILE, ("error", "compile", "")),
    (_stages(("compile", OK), ("run", "timeout")), PASS, ("error", "run", "compile")),
    # a known hang
    (_stages(("compile", OK), ("run", "timeout")), HANG, ("xfail", "run", "compile")),
]


@pytest.mark.parametrize(("stages", "expectation", "said"), ROWS,
                         ids=[f"row{i}" for i in range(len(ROWS))])
def test_each_rule(stages: list[StageResult], expectation: Expectation,
                   said: tuple[str, str, str]) -> None:
    verdict = decide(expectation, stages)
    assert (verdict.outcome, verdict.stage, verdict.reached) == said, verdict


def test_no_stage_is_an_error() -> None:
    assert decide(PASS, []).outcome == "error"


def test_an_expected_warning_that_was_not_printed_fails() -> None:
    stages = [StageResult("compile", OK, "", "", details={"warnings": ["other"]})]
    assert decide(Expectation("pass", warning="deprecated"), stages).outcome == "fail"
    printed = [StageResult("compile", OK, "", "", details={"warnings": ["x is deprecated"]})]
    assert decide(Expectation("pass", warning="deprecated"), printed).outcome == "pass"


def test_an_expected_warning_is_checked_on_an_expected_failure_too() -> None:
    """A case that expects its run to fail and its compile to warn: the failure
    reproducing is no xfail while the warning went missing (an xpass likewise), so every
    outcome where the code did its part is checked for the warning, not a pass alone."""
    silent = StageResult("compile", OK, "", "", details={"warnings": ["other"]})
    ran = [silent, StageResult("inspect", OK), StageResult("load", OK)]
    failed = [*ran, StageResult("run", "failed", "wrong sum")]
    expected = Expectation("fail", stage="run", warning="deprecated")
    judged = decide(expected, failed)
    assert (judged.outcome, judged.reason) == ("fail", "the expected warning was not printed")
    worked = decide(expected, [*ran, StageResult("run", OK)])
    assert (worked.outcome, worked.reason) == ("fail", "the expected warning was not printed")
    warned = replace(silent, details={"warnings": ["x is deprecated"]})
    assert decide(expected, [warned, *failed[1:]]).outcome == "xfail"


def test_a_cccl_too_old_is_named_by_the_release_the_cell_compiled_with() -> None:
    """Issue 37: the diagnosis of a CCCL header or name the toolkit's CCCL lacks names that
    CCCL's version (the toolkit's own, or the header library's ahead of it)."""
    from cudamatrix.config.corpus import Variant
    from cudamatrix.config.plan import Cell
    from cudamatrix.record.verdict import judge

    cell = Cell("c", "v", "12.4", "sm_80", "nvcc")
    variant = Variant("v", source=Path("k.cu"), frontend="nvcc")
    failed = [StageResult("compile", "failed",
                          "x.cuh:19:10: fatal error: cuda/cmath: No such file or directory",
                          "x.cuh:19:10: fatal error: cuda/cmath: No such file or directory")]
    _, _, own = judge(cell, variant, failed, None,
                      {"nvidia-cuda-cccl-cu12": "12.4.127.post1", "nvidia-cuda-nvcc-cu12": "x"})
    assert own is not None and own["rule"] == "cccl-newer-than-toolkit"
    assert own["explanation"].endswith("This cell compiled with nvidia-cuda-cccl-cu12 "
                                       "12.4.127.post1.")
    _, _, ahead = judge(cell, variant, failed, None, {"nvidia-cuda-cccl-cu12": "12.4.127",
                                                      "nvidia-cuda-cccl (headers)": "13.0.85"})
    assert ahead is not None and ahead["explanation"].endswith(
        "This cell compiled with nvidia-cuda-cccl 13.0.85.")


def test_ptx_newer_than_the_driver_is_cudas_rule_said_once(tmp_path: Path) -> None:
    """Issue 40: the published H100 report had 8 `fail` cells that are one fact, CUDA
    13.5's PTX refused by the 580 driver's JIT, which the run had predicted. Judged again
    from the same recorded stages: each is expected by CUDA's rule (xfail where the case
    expects a pass; skip, said, where it expects a later failure this driver hides), and the
    report says the rule once, with the driver a user needs."""
    from cudamatrix.config.corpus import load_corpus
    from cudamatrix.config.defaults import KNOWN_BUGS
    from cudamatrix.record.results import load_results
    from cudamatrix.record.verdict import rejudge
    from cudamatrix.reports.markdown import markdown_report

    # The 2026-11-22 report's toolkit 13.5 cells, as published then (reports/ has been made
    # again since, with the rule in force).
    info, results = load_results(Path(__file__).parents[1] / "data"
                                 / "published-2026-11-22-toolkit-13.5.json")
    before = [r for r in results if r.outcome == "fail" and r.cell.toolkit == "13.5"]
    assert len(before) == 7
    judged = rejudge(results, {c.id: c for c in load_corpus([KNOWN_BUGS])})
    again = {r.cell.id: r for r in judged}
    for result in before:
        now = again[result.cell.id]
        assert now.outcome in ("xfail", "skip"), (result.cell.id, now.outcome, now.reason)
        assert "CUDA's rule, predicted and confirmed" in now.note + now.reason
    assert sum(again[r.cell.id].outcome == "xfail" for r in before) == 5
    text = markdown_report(info, judged)
    assert text.count("Driver: 7 cells of toolkit 13.5 could not load") == 1
    assert "a driver for CUDA 13.5 or newer loads it" in text


def test_a_refusal_the_run_did_not_predict_is_the_cases_to_judge() -> None:
    """CUDA's rule is the verdict only where the run predicted the refusal and the driver's
    own error confirmed it (`agrees`): a load refused for another reason (the prediction
    said refused, the error said otherwise) is judged by the case, a failure a maintainer
    must see, never an expected one."""
    from cudamatrix.config.corpus import load_corpus
    from cudamatrix.config.defaults import KNOWN_BUGS
    from cudamatrix.record.results import load_results
    from cudamatrix.record.verdict import rejudge

    _, results = load_results(Path(__file__).parents[1] / "data"
                              / "published-2026-11-22-toolkit-13.5.json")
    before = [r for r in results if r.outcome == "fail" and r.cell.toolkit == "13.5"]
    assert before and all((r.prediction or {}).get("agrees") for r in before)
    unconfirmed = [replace(r, prediction={**(r.prediction or {}), "agrees": False})
                   for r in before]
    judged = rejudge(unconfirmed, {c.id: c for c in load_corpus([KNOWN_BUGS])})
    assert [r.outcome for r in judged] == ["fail"] * len(before)
    assert not any("CUDA's rule" in r.note + r.reason for r in judged)


def test_a_verdict_judged_again_is_the_same_and_run_rules_are_one_function() -> None:
    """Issue 67: a cell's verdict is decided in record/verdict.py alone. Judged again from
    its recorded stages (`report --rejudge`) a recorded run's cell says what it said, and
    the run-level rules (`judge_run`: max_slowdown, an xpass without a baseline) change
    nothing the second time: run, merge and report, which all end in it, agree."""
    from dataclasses import replace

    from cudamatrix.config.corpus import load_corpus
    from cudamatrix.config.defaults import KNOWN_BUGS
    from cudamatrix.record.results import load_results
    from cudamatrix.record.verdict import judge_run, rejudge

    _, results = load_results(Path(__file__).parents[1] / "data"
                              / "published-2026-11-22-toolkit-13.5.json")
    cases = {c.id: c for c in load_corpus([KNOWN_BUGS])}
    once = judge_run(rejudge(results, cases), cases)
    twice = judge_run(rejudge(once, cases), cases)
    assert [(r.cell.id, r.outcome, r.stage, r.reason) for r in once] \
        == [(r.cell.id, r.outcome, r.stage, r.reason) for r in twice]
    # An xpass with no baseline showing the cell xfail is a fail, whichever command ends it.
    xpass = replace(once[0], outcome="xpass", expected="fail at compile")
    settled = judge_run([xpass], None)[0]
    assert (settled.outcome, settled.reason.startswith("expected fail at compile, but it "
                                                       "worked")) == ("fail", True)
