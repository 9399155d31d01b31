"""cupy: CuPy compiles through the driver and tells the whole story itself (compile, load,
run); the run's side (its classic CUDA folder, the Jitify warm-up) is
job_preparation.prepare_cupy."""

from __future__ import annotations

from ..cell.job import Job
from ..cell.result import StageResult
from .registry import Frontend, register


def _cupy_stages(job: Job) -> list[StageResult]:
    from .cupy_run import cupy_stages

    return cupy_stages(job)


# [variant.options]: how CuPy compiles (its RawModule's flags).
register(Frontend("cupy", stages=_cupy_stages, library="cupy", cached=False,
                  options=("jitify", "enable_cooperative_groups"),
                  option_defaults=(("jitify", False), ("enable_cooperative_groups", False)),
                  needs_gpu_to_compile="CuPy compiles through the driver",
                  arch_bypass_option="jitify"))
