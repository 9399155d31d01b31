"""A step of a cell's pipeline, and what its steps hand on to each other.

A cell's stages are a list of steps run by one loop (stages/runtime/pipeline.py, the one
module that decides which runs next). A frontend that compiles to a module gives only its
compile (the loop adds the inspect, load and run steps); one that does more in its own
process (CuPy compiles through the driver, a build runs the project's own test) gives its
own list of steps. Plain data, so a frontend declares its steps without importing the
runtime above it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .job import Job
from .result import Stage, StageResult


@dataclass
class Carried:
    """What a cell's steps hand on: its job, the stages so far, and where its compile put
    the module it built (the inspect, load and run steps read them)."""

    job: Job
    stages: list[StageResult] = field(default_factory=list)
    ptx: Path | None = None
    cubin: Path | None = None
    library: Path | None = None

    def last(self, stage: Stage) -> StageResult | None:
        """The latest stage of that name so far, if any ran."""
        return next((s for s in reversed(self.stages) if s.stage == stage), None)


@dataclass(frozen=True)
class Step:
    """One step of a cell: the stage it enters (noted in the cell's folder, so a cell
    stopped or crashed in it is recorded there) and what it does, given what came before.
    It says no stage (nothing asked of it: an inspect with no check), one, or several (a
    load and the run of what it loaded, which share one module)."""

    stage: Stage
    run: Callable[[Carried], Sequence[StageResult]]
    # On the GPU: runs only where the cell has one (Job.gpu_stages), where the executor
    # puts it (this process, or the GPU's server).
    gpu: bool = False
    # A compile: the CPU time of the compilers it ran is its first stage's
    # (`compiler_cpu_s`), and where it worked and `recorded`, that stage is the cell's
    # compile record (what --prebuilt, a cache hit and a group's member take back).
    measured: bool = False
    recorded: bool = False
