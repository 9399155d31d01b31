"""Verdicts again, from what a run recorded, against the cases as they are now.

A GPU run can take an hour and the machine may be gone when its results are read; a
case's expectation found wrong there (the run is the evidence) is corrected in the case
file, and the recorded stages (what the compiler, the driver and the kernel really did)
are judged again, without running anything. Every cell keeps its stages, times and
versions; only its outcome, reasons and diagnosis are worked out anew.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..config.corpus import Case
from ..errors import UserError
from .results import CellResult
from .slowdowns import judge_slowdowns
from .verdict import judge


def rejudge(results: Sequence[CellResult], cases: Mapping[str, Case]) -> list[CellResult]:
    judged = []
    for result in results:
        case = cases.get(result.cell.case)
        variant = next((v for v in case.variants if v.name == result.cell.variant), None) \
            if case else None
        if case is None or variant is None:
            raise UserError(f"--rejudge: cell {result.cell.id} has no case "
                            f"{result.cell.case!r} variant {result.cell.variant!r} in the "
                            "corpus (name it with --corpus or --known-bugs)")
        verdict, expectation, diagnosis = judge(result.cell, variant, result.stages,
                                                result.device, result.versions,
                                                result.prediction)
        judged.append(replace(result, outcome=verdict.outcome, stage=verdict.stage,
                              reached=verdict.reached, message=verdict.message,
                              reason=verdict.reason, expected=expectation.describe(),
                              note=expectation.note, diagnosis=diagnosis, title=case.title,
                              upstream=case.upstream))
    return judge_slowdowns(judged, cases)
