"""build: a project's own build (cmake, pip wheel, setup.py) per cell, its outputs
audited; the run's side (the project's folder, the toolkit as $CUDA_HOME, the build's
tools) is job_preparation.prepare_build."""

from __future__ import annotations

from ..cell.job import Job
from ..cell.result import StageResult
from .registry import Frontend, register


def _build_stages(job: Job) -> list[StageResult]:
    from .build_run import build_stages

    return build_stages(job)


register(Frontend("build", stages=_build_stages, needs=("nvcc",), cached=False, slow=True,
                  builds_project=True, reports_resources=True))
