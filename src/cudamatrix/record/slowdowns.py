"""`[variant.time] max_slowdown`: a timed kernel judged against the same cell on another
toolkit of the same run, once every cell has run.

A maintainer who knows a kernel must not lose more than 5% to a toolkit upgrade says
`max_slowdown = { toolkit = "12.4", ratio = 1.05 }`; a cell whose median is more than that
ratio of the 12.4 cell's (same case, variant, arch, library and host compiler) has its run
stage failed with both figures, then is judged again like any other failure, so a case can
expect a known slowdown (`outcome = "fail"`, `stage = "run"`, `match = "slower than"`).
Two cells are needed, so this is decided after the run, here, not in a cell's worker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..config.corpus import Case, Variant
from ..stages.cell.result import StageResult
from ..stages.cell.specs import SlowdownBudget
from .results import CellResult
from .verdict import judge


def _variant(cases: Mapping[str, Case], result: CellResult) -> Variant | None:
    case = cases.get(result.cell.case)
    return next((v for v in case.variants if v.name == result.cell.variant), None) \
        if case else None


def _run_stage(result: CellResult) -> StageResult | None:
    return next((s for s in result.stages if s.stage == "run"), None)


def slowdown_message(result: CellResult, reference: CellResult, budget: SlowdownBudget
                     ) -> str:
    """The run stage's failure, where the cell is over its budget; empty where it is not."""
    mine, theirs = result.timing or {}, reference.timing or {}
    if not float(theirs["median_us"]) > 0:  # readers refuse it; no ratio to a zero
        return ""
    ratio = float(mine["median_us"]) / float(theirs["median_us"])
    if ratio <= budget.ratio:
        return ""
    noise = max(float(mine.get("noise", 0)), float(theirs.get("noise", 0)))
    # The same bytes on both toolkits: the bandwidth falls by the same ratio, said too.
    moved = (f"; {float(mine['bandwidth_gbs']):,.0f} GB/s against "
             f"{float(theirs['bandwidth_gbs']):,.0f} GB/s"
             if mine.get("bandwidth_gbs") and theirs.get("bandwidth_gbs") else "")
    return (f"{result.cell.case}: {mine['median_us']:.2f} us on {result.cell.toolkit} is "
            f"{ratio:.2f}x {reference.cell.toolkit}'s {theirs['median_us']:.2f} us: slower "
            f"than max_slowdown {budget.ratio}x (noise {noise:.1%}){moved}")


def judge_slowdowns(results: Sequence[CellResult], cases: Mapping[str, Case]
                    ) -> list[CellResult]:
    """Every result, the timed ones over their max_slowdown failed at their run stage and
    judged again; the others as they were."""
    by_id = {r.cell.id: r for r in results}
    judged = []
    for result in results:
        variant = _variant(cases, result)
        budget = variant.time.max_slowdown if variant and variant.time else None
        run = _run_stage(result)
        if not budget or variant is None or run is None or run.status != "ok" \
                or not result.timing or result.cell.toolkit == budget.toolkit:
            judged.append(result)
            continue
        reference = by_id.get(replace(result.cell, toolkit=budget.toolkit).id)
        if reference is None or not reference.timing:
            said = (f"max_slowdown: no timed {budget.toolkit} cell of the same case, "
                    "variant and arch in this run to compare with")
            stages = tuple(replace(s, details={**s.details, "slowdown": said})
                           if s is run else s for s in result.stages)
            judged.append(replace(result, stages=stages))
            continue
        message = slowdown_message(result, reference, budget)
        if not message:
            judged.append(result)
            continue
        stages = tuple(replace(s, status="failed", message=message,
                               log=f"{s.log}\n{message}".strip()) if s is run else s
                       for s in result.stages)
        verdict, expectation, diagnosis = judge(result.cell, variant, stages, result.device,
                                                result.versions, result.prediction)
        judged.append(replace(result, stages=stages, outcome=verdict.outcome,
                              stage=verdict.stage, reached=verdict.reached,
                              message=verdict.message, reason=verdict.reason,
                              expected=expectation.describe(), note=expectation.note,
                              diagnosis=diagnosis))
    return judged
