"""build: a project's own build (cmake, pip wheel, setup.py) per cell, its outputs
audited; the run's side (the project's folder, the toolkit as $CUDA_HOME, the build's
tools) is job_preparation.prepare_build."""

from __future__ import annotations

from ..cell.job import Job
from ..cell.steps import Step
from .registry import Frontend, register


def _build_steps(job: Job) -> list[Step]:
    from .build_run import build_steps

    return build_steps(job)


register(Frontend("build", steps=_build_steps, needs=("nvcc",), cached=False, guess_s=120.0,
                  builds_project=True, reports_resources=True))
