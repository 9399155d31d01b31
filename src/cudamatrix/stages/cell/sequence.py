"""Whether a cell's next stage runs: the one rule every place that runs stages asks (the
pipeline's loop, the GPU's server, the load step before its run, the torch extension's
import before its call, the run's process before it hands a cached compile to a GPU's
worker). Here, below every stage, because each of them may import this group and no
other: written once, a new stage or status cannot go on in one place and stop in another.
"""

from __future__ import annotations

from collections.abc import Sequence

from .result import StageResult

# A stage in one of these says the cell cannot go on: a tool broke, it hung, it crashed.
ENDS = ("error", "timeout", "crashed")
GPU_STAGES = ("load", "run")


def ended(stage: StageResult) -> bool:
    """Whether `stage` broke, hung or crashed: no stage after it runs, and what it made is
    not kept as the code's own answer."""
    return stage.status in ENDS


def stops(stage: StageResult) -> bool:
    """Whether a cell stops after `stage` alone, wherever it stands: it ended, or it is a
    GPU stage that did not work (nothing runs on a module that did not load)."""
    return ended(stage) or (stage.stage in GPU_STAGES and stage.status != "ok")


def goes_on(stages: Sequence[StageResult]) -> bool:
    """Whether a cell's next step runs after `stages`: the compile must have worked; a
    stage that erred, hung or crashed ends the cell, and so does a load that did not work;
    an artifact check or a budget that failed does not (on a GPU what the bad build does
    there is evidence worth keeping)."""
    if not stages:
        return True
    compiled, last = stages[0], stages[-1]
    if compiled.stage != "compile" or compiled.status != "ok":
        return False
    if any(s.status in ENDS for s in stages):
        return False
    return not (last.stage in GPU_STAGES and last.status != "ok")
