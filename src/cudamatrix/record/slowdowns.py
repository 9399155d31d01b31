"""`[variant.time] max_slowdown`: a timed kernel judged against the same cell on another
toolkit of the same run, once every cell has run.

A maintainer who knows a kernel must not lose more than 5% to a toolkit upgrade says
`max_slowdown = { toolkit = "12.4", ratio = 1.05 }`; a cell whose median is more than that
ratio of the 12.4 cell's (same case, variant, arch, library and host compiler) has its run
stage failed with both figures, then is judged again like any other failure, so a case can
expect a known slowdown (`outcome = "fail"`, `stage = "run"`, `match = "slower than"`).
Two cells are needed, so this is decided after the run, by `verdict.judge_run`; this module
says only whether and by how much a cell is slower.
"""

from __future__ import annotations

from ..stages.cell.specs import SlowdownBudget
from .results import CellResult


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
