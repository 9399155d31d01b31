"""A cell's outcome, computed from what its stages really did against the case's expectation.

pass   everything that could run did as expected, and success was expected
xfail  it failed (or hung) where and how the case expects (the bug reproduces)
xpass  the case expects a failure that did not happen: possibly fixed upstream
fail   it failed where success was expected, or failed differently than expected
error  the tool or the environment broke (compiler crash, timeout, bad wheel)
skip   the cell cannot be decided here, with the reason
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.case_tables import STAGES, Expectation
from ..config.corpus import Variant
from ..config.plan import Cell
from ..stages.cell.result import Reached, Stage, StageResult
from ..stages.compile.logs import error_lines, warning_lines
from ..stages.frontends import frontend
from .diagnose import UNCLASSIFIED, diagnose_stage
from .outcomes import Outcome


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    stage: Stage
    reached: Reached
    message: str
    reason: str


def _matches(pattern: str, failed: StageResult) -> bool:
    """Whether the failure said what the case expects: its errors, never its warnings.

    The decisive message is an error line, or a script's stated reason; a warning is
    neither, so a `#warning` mentioning the expected words cannot make a false xfail.
    """
    if failed.message and re.search(pattern, failed.message):
        return True
    return any(re.search(pattern, text) for text in error_lines(failed.log) if text)


def _warned(expectation: Expectation, stages: Sequence[StageResult]) -> Verdict | None:
    """A failing verdict when the case expects a compiler warning the compile did not print."""
    if not expectation.warning or not stages or stages[0].stage != "compile" \
            or stages[0].status != "ok":
        return None
    warnings = stages[0].details.get("warnings") or warning_lines(stages[0].log)
    if any(re.search(expectation.warning, w) for w in warnings):
        return None
    printed = f"it printed: {warnings[0]}" if warnings else "it printed none"
    return Verdict("fail", "compile", "compile",
                   f"expected a compiler warning matching /{expectation.warning}/; {printed}",
                   "the expected warning was not printed")


def _order(stage: str) -> int:
    return STAGES.index(stage) if stage in STAGES else len(STAGES)


def decide(expectation: Expectation, stages: Sequence[StageResult]) -> Verdict:
    if not stages:
        return Verdict("error", "compile", "", "no stage ran", "the cell produced no result")
    verdict = _decide(expectation, stages)
    if verdict.outcome in ("pass", "xfail", "xpass"):
        return _warned(expectation, stages) or verdict
    return verdict


def _decide(expectation: Expectation, stages: Sequence[StageResult]) -> Verdict:
    reached: Reached = ""
    for result in stages:
        if result.status == "ok":
            reached = result.stage
            continue
        return _decide_at(expectation, result, reached)
    last = stages[-1].stage
    if expectation.outcome == "pass":
        return Verdict("pass", last, reached, "", f"expected pass; passed through {reached}")
    return Verdict("xpass", expectation.stage or last, reached,
                   f"expected {expectation.describe()}, but every stage passed",
                   "possibly fixed upstream")


def _hung(expectation: Expectation, result: StageResult, reached: Reached) -> Verdict:
    """A cell stopped at its limit, judged against a case that expects the hang."""
    stage, message = result.stage, result.message
    if expectation.stage not in (None, stage):
        return Verdict("fail", stage, reached, message,
                       f"expected {expectation.describe()}; it hung in {stage} instead")
    if expectation.match and not any(re.search(expectation.match, text)
                                     for text in (message, result.log) if text):
        return Verdict("fail", stage, reached, message,
                       f"expected {expectation.describe()}; it hung somewhere else")
    return Verdict("xfail", stage, reached, message, f"hung as expected ({expectation.describe()})")


def _decide_at(expectation: Expectation, result: StageResult, reached: Reached) -> Verdict:
    stage, status, message = result.stage, result.status, result.message
    if status == "timeout" and expectation.outcome == "timeout":
        return _hung(expectation, result, reached)
    if status in ("error", "timeout", "crashed"):
        return Verdict("error", stage, reached, message or status, f"{status} in {stage}")
    if status == "unsupported":
        return Verdict("skip", stage, reached, message, message)
    if status == "unavailable":
        return Verdict("skip", stage, reached, message, "this environment cannot run the cell")
    if status == "skipped":
        wanted = expectation.stage or STAGES[-1]
        if expectation.outcome != "pass" and _order(wanted) >= _order(stage):
            return Verdict("skip", stage, reached, message,
                           f"expected {expectation.describe()}, which cannot be checked here: "
                           f"{message}")
        # A pass is reported at the stage it passed through, in results.json as in every
        # report (its Markdown said `pass (inspect)` where results.json said `load`).
        passed = expectation.outcome == "pass"
        return Verdict("pass" if passed else "xpass", reached or stage if passed else stage,
                       reached, "" if passed else
                       f"expected {expectation.describe()}, but passed through {reached}",
                       f"passed through {reached}; {stage} not run: {message}")
    # status == "failed": the code under test was refused or wrong.
    if expectation.outcome != "fail":
        return Verdict("fail", stage, reached, message,
                       f"expected {expectation.describe()}; failed at {stage}")
    if expectation.stage not in (None, stage):
        return Verdict("fail", stage, reached, message,
                       f"expected {expectation.describe()}; failed at {stage} instead")
    if expectation.match and not _matches(expectation.match, result):
        return Verdict("fail", stage, reached, message,
                       f"expected {expectation.describe()}; the failure said something else")
    return Verdict("xfail", stage, reached, message,
                   f"failed as expected ({expectation.describe()})")


def judge(cell: Cell, variant: Variant, stages: Sequence[StageResult],
          device: Mapping[str, Any] | None, versions: Mapping[str, str] | None = None,
          prediction: Mapping[str, Any] | None = None
          ) -> tuple[Verdict, Expectation, dict[str, Any] | None]:
    """A cell's verdict, the expectation that decided it and, short of a pass, the
    diagnosis: from what its stages did, on the GPU and driver it ran on (if any); a
    diagnosis that a CCCL is too old names the one the cell compiled with (`versions`).
    PTX newer than the driver can JIT is CUDA's documented rule, not the case's failure:
    where the run predicted the refusal (`prediction`) and the driver confirmed it, the
    cell is expected to fail there, saying so (driver_rule)."""
    axes = cell.axes()
    if device:
        axes["driver"] = device.get("driver")
        axes["gpu_arch"] = device.get("arch")
    expectation = variant.expectation_for(axes)
    verdict = decide(expectation, stages)
    ruled = driver_rule(cell, verdict, prediction, device)
    if ruled is not None and expectation.outcome == "pass":
        expectation = ruled
        verdict = decide(expectation, stages)
    elif ruled is not None:  # the case expects a failure later, which this driver hides
        verdict = Verdict("skip", "load", verdict.reached, verdict.message,
                          f"expected {expectation.describe()}, which cannot be checked on "
                          f"this driver: {ruled.note}")
    diagnosis = None
    if verdict.outcome != "pass":
        failing = next((s for s in stages if s.status != "ok"), stages[-1])
        # CuPy's Jitify preprocesses before CuPy adds the arch option.
        bypass = frontend(cell.frontend).arch_bypass_option
        arch_reached = variant.arch_flag and not (bypass and variant.options.get(bypass))
        diagnosis = diagnose_stage(verdict.message, failing, arch_reached).to_dict()
        if diagnosis["rule"] == "cccl-newer-than-toolkit":
            diagnosis["explanation"] += _cccl_of(versions or {})
        if verdict.outcome == "skip" and diagnosis["rule"] == UNCLASSIFIED:
            # A skip's reason is the tool's own sentence: "No rule matched" adds nothing.
            diagnosis = None
    return verdict, expectation, diagnosis


def driver_rule(cell: Cell, verdict: Verdict, prediction: Mapping[str, Any] | None,
                device: Mapping[str, Any] | None) -> Expectation | None:
    """The expectation CUDA's own rule gives a cell whose PTX the driver refused as the run
    predicted (a driver JITs PTX up to the ISA of the CUDA release it supports): a failure
    at load, saying the driver a user needs. None where the case decides."""
    if verdict.outcome != "fail" or verdict.stage != "load" or not prediction \
            or prediction.get("predicted") != "refused" or not prediction.get("agrees"):
        return None
    driver = (device or {}).get("driver") or "this driver"
    note = (f"CUDA's rule, predicted and confirmed: driver {driver} (CUDA "
            f"{prediction.get('driver_cuda')}) JIT-compiles PTX up to ISA "
            f"{prediction.get('driver_ptx_isa')}; toolkit {cell.toolkit}'s PTX is ISA "
            f"{prediction.get('ptx_version')}: a driver for CUDA {cell.toolkit} or newer loads "
            "it, or ship SASS for the GPU")
    return Expectation("fail", stage="load", match="UNSUPPORTED_PTX_VERSION", note=note)


def _cccl_of(versions: Mapping[str, str]) -> str:
    """The CCCL the cell compiled with, as its packages say: a header library's release
    ahead of the toolkit's (`nvidia-cuda-cccl (headers)`), else the toolkit's own."""
    ahead = {n: v for n, v in versions.items() if "cccl" in n and n.endswith("(headers)")}
    own = {n: v for n, v in versions.items() if "cccl" in n and n not in ahead}
    found = ahead or own
    if not found:
        return ""
    said = ", ".join(f"{n.removesuffix(' (headers)')} {v}" for n, v in sorted(found.items()))
    return f" This cell compiled with {said}."
