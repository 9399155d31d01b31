"""cupy: CuPy compiles through the driver, so its steps are its own (compile, load, run:
cupy_run.cupy_steps); the run's side (its classic CUDA folder, the Jitify warm-up) is
job_preparation.prepare_cupy."""

from __future__ import annotations

from ..cell.job import Job
from ..cell.steps import Step
from .registry import Frontend, register


def _cupy_steps(job: Job) -> list[Step]:
    from .cupy_run import cupy_steps  # imports CuPy's helpers only in a cell's worker

    return cupy_steps(job)


# [variant.options]: how CuPy compiles (its RawModule's flags).
register(Frontend("cupy", steps=_cupy_steps, library="cupy", cached=False,
                  options=("jitify", "enable_cooperative_groups"),
                  option_defaults=(("jitify", False), ("enable_cooperative_groups", False)),
                  needs_gpu_to_compile="CuPy compiles through the driver",
                  arch_bypass_option="jitify"))
