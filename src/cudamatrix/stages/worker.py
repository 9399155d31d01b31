"""A cell's own process: ``python -m cudamatrix.stages.worker < job.json``.

Every cell runs here, so a compiler that segfaults, a kernel that crashes the
context or a library that calls abort() ends this process and nothing else;
the orchestrator turns that into the cell's `crashed` or `timeout` result.
The last line written to stdout is the JSON list of stage results.
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback

from .compile import COMPILERS
from .inspect import inspect_artifacts
from .job import Job
from .result import StageResult


def execute(job: Job) -> list[StageResult]:
    stages: list[StageResult] = []
    try:
        build = COMPILERS[job.frontend](job)
    except subprocess.TimeoutExpired:
        return [StageResult("compile", "timeout",
                            f"compiler ran past the cell's {job.timeout:.0f} s limit")]
    except Exception as exc:  # the tool broke, not the code under test
        return [StageResult("compile", "error", f"{type(exc).__name__}: {exc}",
                            traceback.format_exc())]
    stages.append(build.result)
    if build.result.status != "ok":
        return stages
    if job.artifacts:
        inspected = inspect_artifacts(job.artifacts, build.ptx, build.cubin)
        stages.append(inspected)
        if inspected.status != "ok":
            return stages
    if job.gpu_stages:
        from .device import load_and_run

        stages.extend(load_and_run(job, build.ptx, build.cubin))
    return stages


def main() -> None:
    job = Job.from_json(sys.stdin.read())
    stages = execute(job)
    sys.stdout.write("\n" + json.dumps([s.to_dict() for s in stages]) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
