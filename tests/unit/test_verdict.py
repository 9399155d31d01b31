"""A cell's outcome from its stages and the case's expectation (verdict.decide), as a table:
every rule of verdict.py, each row a cell's stages, what the case expects, and the outcome,
stage and reached stage the reports must say (written out, never computed here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.case_tables import Expectation
from cudamatrix.stages.result import StageResult
from cudamatrix.verdict import decide

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


def test_a_cccl_too_old_is_named_by_the_release_the_cell_compiled_with() -> None:
    """Issue 37: the diagnosis of a CCCL header or name the toolkit's CCCL lacks names that
    CCCL's version (the toolkit's own, or the header library's ahead of it)."""
    from cudamatrix.corpus import Variant
    from cudamatrix.plan import Cell
    from cudamatrix.verdict import judge

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
