"""The compile stage's shared part: what every frontend's compile ends in (a Build: the
stage's result and where the PTX, cubin or library landed), and how a refused or a
finished compile is recorded. Each frontend's own compile is in stages/frontends/."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..binaries.facts import shipped_images
from ..cell.job import Job
from ..cell.result import StageResult, Status
from ..inspect.kernel_names import cpp_names
from ..process.limits import cut_bytes, run_tool
from .logs import (
    cuobjdump_resource_usage,
    decisive_line,
    missing_include,
    resource_usage,
    warning_lines,
)


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
                                 dict(details), accident=accident))
    status: Status = "failed"
    message = decisive_line(log)
    header = missing_include(log)
    lacking = job.env.lacks_header(header) if header and job.env else None
    if lacking:
        status, message = "unavailable", lacking
    return Build(StageResult("compile", status, message, log, time.monotonic() - started,
                             dict(details)))


def module_figures(job: Job, ptx: Path | None, cubin: Path) -> tuple[list[dict[str, Any]], str]:
    """Each kernel's figures from what was built, where the compiler's log holds none
    (a compiler's own cache answered, which prints nothing): registers, stack and static
    shared memory from the cubin's attributes (``cuobjdump -res-usage``), spills from the
    toolkit's ``ptxas -v`` on the kept PTX for the cell's arch. Never a budget left
    unjudged because a cache answered; the record says where the figures came from."""
    if not job.cuobjdump:
        return [], ""
    read = run_tool([job.cuobjdump, "-res-usage", str(cubin)], 60, cwd=job.work)
    records = [{k: v for k, v in r.items() if k != "arch"}
               for r in cuobjdump_resource_usage(read.output)]
    said = "the cubin (cuobjdump -res-usage)"
    ptxas = job.env.ptxas if job.env else None
    if records and ptx is not None and ptx.is_file() and ptxas:
        spills = run_tool([ptxas, f"-arch={job.arch}", "-v", "-o", "/dev/null", str(ptx)], 300,
                          memory_bytes=job.memory_bytes, cwd=job.work)
        found = {u["kernel"]: u for u in resource_usage(spills.output)}
        for record in records:
            for key in ("spill_store_bytes", "spill_load_bytes"):
                if key in found.get(record["kernel"], {}):
                    record[key] = found[record["kernel"]][key]
        said += " and the kept PTX's spills (ptxas -v)"
    return records, said


# Where a compile's figures came from: the log the cell keeps, which may be cut...
FROM_LOG = "the compiler's log (ptxas -v)"
# ...or the compiler's whole output, read before any cut (PtxasFigures).
FROM_WHOLE_OUTPUT = "the compiler's whole output (ptxas -v), by the arch ptxas named"


def no_figures_reason(log: str) -> str:
    """Why a log the cell keeps gave no kernel's figures, as a budget's error says it."""
    cut = cut_bytes(log)
    if cut:
        return (f"the compiler's output was cut ({cut} bytes) and what was kept holds no "
                "kernel's figures (ptxas -v)")
    return ("the compiler reported no kernel's resource usage (a module without kernels, "
            "or one built by a compiler that does not say it)")


def build_success(job: Job, log: str, started: float, details: dict[str, object],
              ptx: Path | None, cubin: Path | None, library: Path | None = None,
              figures_from_module: bool = False, read_outside: tuple[str, ...] = (),
              reported: tuple[list[dict[str, Any]], str] | None = None) -> Build:
    """A successful compile: its resource usage and warnings read off the tools' own log,
    or the figures `reported` (read off the whole output before it was cut, with why there
    are none when none; PtxasFigures)
    (`figures_from_module`: off the built module where the log holds none, for a compiler
    whose own cache may answer silently: module_figures),
    and what the build ships (SASS arch, PTX ISA, sizes), read off the artifacts as the
    audit reads a wheel's. With no figures, the record says why (a budget's error says it)."""
    if reported is not None:
        usages, missing = reported
        details["resources_from"] = FROM_WHOLE_OUTPUT
    else:
        usages, missing = resource_usage(log), no_figures_reason(log)
        details["resources_from"] = FROM_LOG
    if not usages and figures_from_module and cubin is not None and cubin.is_file():
        usages, details["resources_from"] = module_figures(job, ptx, cubin)
    if not usages:
        details.pop("resources_from")
        details["resources_missing"] = missing
    # Each kernel also by the name its author writes (the report shows that one).
    details["resources"] = [{**usage, "name": name} for usage, name in
                            zip(usages, cpp_names([u["kernel"] for u in usages]), strict=True)]
    details["warnings"] = warning_lines(log)
    details["ships"] = shipped_images(cubin, ptx, job.arch)
    return Build(StageResult("compile", "ok", "", log, time.monotonic() - started, details,
                             read_outside=read_outside), ptx, cubin, library)


def figures_doubt(stage: StageResult) -> str | None:
    """Why a recorded compile's resource figures are proved wrong, so that no cache serves
    them (a record made before figures were read off the whole output, or damaged); None
    when nothing proves them wrong. Proof is: a build of several archs whose figures were
    read off a log that was cut (a cut can hand one arch's lines to another), a figure
    ptxas made for another arch than the cell's, or no figures and no reason why while
    the cell's cubin holds kernels."""
    if stage.stage != "compile" or stage.status != "ok":
        return None
    details = stage.details
    resources = details.get("resources") or []
    sass = [image for image in details.get("ships") or [] if image.get("kind") == "sass"]
    if resources and stage.built_with and details.get("resources_from") == FROM_LOG \
            and cut_bytes(stage.log):
        return "its resource figures were read off a cut log"
    arch = sass[0].get("arch") if sass else None
    strays = sorted({str(r["arch"]) for r in resources if r.get("arch") not in (None, arch)})
    if arch and strays:
        return f"its resource figures for {arch} are ptxas's for {', '.join(strays)}"
    kernels = sum(int(image.get("kernels") or 0) for image in sass)
    if not resources and "resources_missing" not in details and kernels and stage.built_with:
        return (f"it has no resource figures for its cubin's {kernels} kernels, though "
                "one nvcc built it with ptxas -v")
    return None
