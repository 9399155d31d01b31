"""The compile stage's shared part: what every frontend's compile ends in (a Build: the
stage's result and where the PTX, cubin or library landed), and how a refused or a
finished compile is recorded. Each frontend's own compile is in stages/frontends/."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .binaries.facts import shipped_images
from .job import Job
from .kernel_names import cpp_names
from .logs import decisive_line, missing_include, resource_usage, warning_lines
from .result import StageResult, Status


@dataclass(frozen=True)
class Build:
    """The compile stage's result plus where its artifacts landed."""

    result: StageResult
    ptx: Path | None = None
    cubin: Path | None = None
    library: Path | None = None


def build_failure(job: Job, log: str, started: float, accident: str | None = None,
             **details: object) -> Build:
    """A refused compile; `unavailable` (a skip) when what the compiler could not open is a
    public header the toolkit's own packages do not ship, so the toolkit, not the code,
    is what is missing; `error` when the compiler did not finish on its own (a signal,
    the memory limit), which says nothing about the code and is never cached."""
    if accident:
        return Build(StageResult("compile", "error", accident, log, time.monotonic() - started,
                                 {**details, "accident": accident}))
    status: Status = "failed"
    message = decisive_line(log)
    header = missing_include(log)
    lacking = job.env.lacks_header(header) if header and job.env else None
    if lacking:
        status, message = "unavailable", lacking
    return Build(StageResult("compile", status, message, log, time.monotonic() - started,
                             dict(details)))


def build_success(job: Job, log: str, started: float, details: dict[str, object],
              ptx: Path | None, cubin: Path | None, library: Path | None = None) -> Build:
    """A successful compile: its resource usage and warnings read off the tools' own log,
    and what the build ships (SASS arch, PTX ISA, sizes), read off the artifacts as the
    audit reads a wheel's."""
    # Each kernel also by the name its author writes (the report shows that one).
    usages = resource_usage(log)
    details["resources"] = [{**usage, "name": name} for usage, name in
                            zip(usages, cpp_names([u["kernel"] for u in usages]), strict=True)]
    details["warnings"] = warning_lines(log)
    details["ships"] = shipped_images(cubin, ptx, job.arch)
    return Build(StageResult("compile", "ok", "", log, time.monotonic() - started, details),
                 ptx, cubin, library)
