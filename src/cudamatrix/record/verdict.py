"""A cell's verdict, decided here alone: from what its stages really did against the case's
expectation (`judge`, `judge_cell`), and then by the rules that need the whole run
(`judge_run`: a kernel's time against another toolkit's, an xpass against a baseline). The
run, `merge` and `report --rejudge` all end in `judge_run`; a record's verdict fields are
written from a `Verdict` by `_verdict_fields` alone. A cell no stage judged is decided here
too: a shard's lost cell (`lost_verdict`), an audit's module on a GPU (`audit_verdict`) and
one it could not read (`unreadable_verdict`); and which attempt a retried cell keeps
(`retried_cell`). The rules that read outcomes alone (flaky attempts, --retries, a cell
against a baseline, --fail-on) are this module's, kept in `verdict_rules` below the record
and the baseline, which ask them too. tests/unit/test_verdict_walk.py finds an outcome set,
or one of those rules tested, anywhere else.

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
from dataclasses import dataclass, replace
from typing import Any

from ..config.case_tables import STAGES, Expectation
from ..config.corpus import Case, Variant
from ..config.plan import Cell
from ..errors import UserError
from ..stages.cell.result import Reached, Stage, StageResult
from ..stages.compile.logs import error_lines, warning_lines
from ..stages.frontends import frontend
from .baseline import Baseline
from .diagnose import UNCLASSIFIED, diagnose_stage
from .outcomes import WORKING, Outcome
from .results import CellResult
from .slowdowns import slowdown_message


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
    if verdict.outcome in WORKING:
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
    if status == "skipped" and not reached:
        # Nothing ran (its compile was not done here): nothing was checked, whatever the
        # case expects. A pass would say the code compiled.
        return Verdict("skip", stage, reached, message,
                       f"{stage} not run, nor any stage after it: {message}")
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


def lost_verdict(message: str) -> Verdict:
    """A planned cell no shard reported (merge): an error of the run, named, never a silent
    gap; no stage of it is known, so it stands at the first."""
    return Verdict("error", "compile", "", message,
                   "the shard that was to run it reported nothing")


def unreadable_verdict(why: str) -> Verdict:
    """An audited file whose device code could not be read whole: an error, never a guess."""
    return Verdict("error", "inspect", "", why, "its device code could not be read")


def audit_verdict(loads: bool, declared: bool, named: bool, message: str) -> Verdict:
    """An audited module on one GPU and driver: `loads` (measured, else predicted) against
    whether that GPU is one it must load on (`declared`: a GPU the user named, or any where
    none is named). A module that does not load where it need not is the expected failure."""
    if loads:
        return Verdict("pass", "load", "load", message, "loads")
    if declared:
        return Verdict("fail", "load", "inspect", message,
                       "does not load on an expected GPU" if named else "does not load")
    return Verdict("xfail", "load", "inspect", message,
                   "does not load, as declared (not an expected GPU)")


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


def _verdict_fields(verdict: Verdict, expectation: Expectation,
                    diagnosis: dict[str, Any] | None) -> dict[str, Any]:
    """What a record says of its verdict, from the verdict: the one mapping of a `Verdict`
    onto a `CellResult`, whether the cell was judged as it ran or again later."""
    return {"outcome": verdict.outcome, "stage": verdict.stage, "reached": verdict.reached,
            "message": verdict.message, "reason": verdict.reason,
            "expected": expectation.describe(), "note": expectation.note,
            "diagnosis": diagnosis}


def judge_cell(cell: Cell, case: Case, variant: Variant, stages: Sequence[StageResult], *,
               seconds: float, versions: Mapping[str, str], device: Mapping[str, Any] | None,
               prediction: Mapping[str, Any] | None) -> CellResult:
    """A cell's record from what its stages did, judged against its case."""
    verdict, expectation, diagnosis = judge(cell, variant, stages, device, versions,
                                            prediction)
    return CellResult(cell=cell, stages=tuple(stages), seconds=seconds, title=case.title,
                      upstream=case.upstream, versions=dict(versions),
                      device=dict(device) if device is not None else None,
                      prediction=dict(prediction) if prediction is not None else None,
                      **_verdict_fields(verdict, expectation, diagnosis))


def retried_cell(latest: CellResult, earlier: Sequence[CellResult]) -> CellResult:
    """A cell run again under --retries (verdict_rules.runs_again): it keeps its latest
    attempt, the first as its case expects or else the last allowed, whose stages and
    verdict are the cell's; the `earlier` ones, oldest first, are kept as its attempts
    (what decided each, verdict_rules.is_flaky reads them)."""
    if not earlier:
        return latest
    return replace(latest, attempts=tuple(result.attempt_said() for result in earlier))


def _judged_again(result: CellResult, case: Case, variant: Variant,
                  stages: Sequence[StageResult] | None = None) -> CellResult:
    """`result` judged again from its recorded stages (or `stages` in their place): every
    fact it recorded kept, its verdict worked out anew against the case as it is now."""
    stages = tuple(stages) if stages is not None else result.stages
    verdict, expectation, diagnosis = judge(result.cell, variant, stages, result.device,
                                            result.versions, result.prediction)
    return replace(result, stages=stages, title=case.title, upstream=case.upstream,
                   **_verdict_fields(verdict, expectation, diagnosis))


def variant_of(cases: Mapping[str, Case], cell: Cell) -> tuple[Case, Variant] | None:
    """The case and variant a cell was made from, where the corpus still has them."""
    case = cases.get(cell.case)
    variant = next((v for v in case.variants if v.name == cell.variant), None) \
        if case else None
    return (case, variant) if case is not None and variant is not None else None


def rejudge(results: Sequence[CellResult], cases: Mapping[str, Case]) -> list[CellResult]:
    """`report --rejudge`: every recorded cell judged again against the cases as they are
    now, without running anything (a GPU run's machine may be gone when an expectation is
    found wrong); the run-level rules follow in `judge_run`. A cell whose case or variant
    the corpus lacks cannot be judged: one line naming it."""
    judged = []
    for result in results:
        found = variant_of(cases, result.cell)
        if found is None:
            raise UserError(f"--rejudge: cell {result.cell.id} has no case "
                            f"{result.cell.case!r} variant {result.cell.variant!r} in the "
                            "corpus (name it with --corpus or --known-bugs)")
        judged.append(_judged_again(result, *found))
    return judged


def _slowdown_judged(result: CellResult, by_id: Mapping[str, CellResult],
                     cases: Mapping[str, Case]) -> CellResult:
    """`[variant.time] max_slowdown`: a timed cell over its budget against the same cell on
    the budget's toolkit has its run stage failed with both figures and is judged again
    (so a case can expect a known slowdown); a cell with no timed reference in the run says
    so on its run stage. Others as they were."""
    found = variant_of(cases, result.cell)
    if found is None:
        return result
    case, variant = found
    budget = variant.time.max_slowdown if variant.time else None
    run = next((s for s in result.stages if s.stage == "run"), None)
    if not budget or run is None or run.status != "ok" or not result.timing \
            or result.cell.toolkit == budget.toolkit:
        return result
    reference = by_id.get(replace(result.cell, toolkit=budget.toolkit).id)
    if reference is None or not reference.timing:
        said = (f"max_slowdown: no timed {budget.toolkit} cell of the same case, "
                "variant and arch in this run to compare with")
        return replace(result, stages=tuple(
            replace(s, details={**s.details, "slowdown": said}) if s is run else s
            for s in result.stages))
    message = slowdown_message(result, reference, budget)
    if not message:
        return result
    failed = replace(run, status="failed", message=message,
                     log=f"{run.log}\n{message}".strip())
    return _judged_again(result, case, variant,
                         tuple(failed if s is run else s for s in result.stages))


def settled(result: CellResult, baseline: Baseline | None,
            run_labels: frozenset[str] = frozenset()) -> CellResult:
    """An expected failure that worked is "possibly fixed upstream" only against a baseline
    where that cell failed as expected. On its first run it is far likelier a wrong
    expectation, and a maintainer must hear of it: a `fail` saying so, not an exit 0. (The
    progress line shows a cell settled so as it finishes.)"""
    if result.outcome != "xpass":
        return result
    found = baseline.match(result.cell.id, run_labels) if baseline else None
    if (found or {}).get("outcome") == "xfail":
        return result
    return replace(result, outcome="fail", reason=(
        f"expected {result.expected}, but it worked, and no baseline shows it "
        "failing: check the expectation (an xpass is reported only against a "
        "--baseline where the cell was xfail)"))


def judge_run(results: Sequence[CellResult], cases: Mapping[str, Case] | None,
              baseline: Baseline | None = None,
              run_labels: frozenset[str] = frozenset()) -> list[CellResult]:
    """The verdicts that need more than one cell, once every cell is in: what run, merge
    and `report` all end with. A timed kernel against its `max_slowdown` toolkit where the
    cases are known (a merge has both toolkits' shards), then an xpass against the
    baseline (`settled`). Judging a judged run again changes nothing."""
    if cases:
        by_id = {r.cell.id: r for r in results}
        results = [_slowdown_judged(r, by_id, cases) for r in results]
    return [settled(r, baseline, run_labels) for r in results]
