"""The inspect stage: is the built module what the case says it must be?

Exit codes miss a whole class of bug: CUTLASS built for plain sm_90 compiles
cleanly, carries no WGMMA, and aborts only at run time on the GPU. Checking
the PTX, the machine code (SASS, disassembled; what ``in = "cubin"`` means too) and
the strings a cubin embeds turns that into a build-time finding, and so does a
kernel's register, spill, stack or shared-memory figure over the case's budget. The
case's `kernel`, named as C++ names it, is found here among the module's entries (its
name in the module is what the load and run stages use), or the case error says
which kernels the module has.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...errors import Failure
from ..binaries.facts import cubin_kernel_names
from ..cell.cell_environment import cell_environment
from ..cell.job import Job
from ..cell.result import StageResult
from ..cell.specs import ArtifactCheck, ResourceBudget
from ..process.limits import decode
from .artifact_text import cubin_strings
from .budgets import judge_budget, reporter
from .kernel_names import KERNEL_RECORD, KERNEL_REFUSED, KernelName, KernelNotFound, resolve

_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)", re.MULTILINE)


def entry_names(ptx: str) -> list[str]:
    """The kernels a PTX module defines, by the names the driver looks them up by."""
    return _ENTRY.findall(ptx)


def disassemble(cuobjdump: str | None, cubin: Path) -> tuple[str | None, str]:
    """The cubin's SASS as cuobjdump prints it, or None with the reason it could not."""
    if cuobjdump is None:
        return None, "no cuobjdump in this environment to disassemble the cubin"
    try:
        done = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True,
                              timeout=120, check=False, env=cell_environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cuobjdump -sass failed: {exc}"
    text = decode(done.stdout)
    if done.returncode != 0 or "Function :" not in text:
        why = decode(done.stderr).strip().splitlines()
        return None, f"cuobjdump -sass could not disassemble it: {why[-1] if why else text[:200]}"
    return text, ""


def module_kernels(ptx_text: str | None, cubin: Path | None) -> list[str] | None:
    """The kernels of the built module by their names in it: the PTX's entries, else the
    cubin's (each kernel has its own ``.nv.info.<name>`` section); None without either."""
    if ptx_text is not None:
        return entry_names(ptx_text)
    if cubin is not None and cubin.exists():
        return cubin_kernel_names(cubin.read_bytes())
    return None


def name_kernel(kernel: str, compiled: Mapping[str, Any],
                kernels: Sequence[str] | None) -> KernelName | Failure | None:
    """The case's kernel as the module holds it, or the case error saying why it is not
    there (with the module's kernels as C++ prints them); None when nothing was built to
    look in (a script that wrote no module)."""
    if KERNEL_REFUSED in compiled:
        # NVRTC would not take the name as an expression (a template with no arguments, an
        # overload); the module's own entries may still hold exactly one by that name.
        try:
            return resolve(kernel, kernels or [])
        except KernelNotFound as exc:
            by = compiled.get("kernel_refused_by", "NVRTC, given it as a name expression")
            return Failure(f"{exc}; {by}: {compiled[KERNEL_REFUSED]}")
    if KERNEL_RECORD in compiled:  # the compiler resolved the name itself
        record = compiled[KERNEL_RECORD]
        named = KernelName(record["name"], record["lowered"], record["signature"])
        if kernels is None or named.lowered in kernels:
            return named
    if kernels is None:
        return None
    try:
        return resolve(kernel, kernels)
    except KernelNotFound as exc:
        return Failure(str(exc))


def _text_for(kind: str, texts: dict[str, str | None]) -> str | None:
    # A cubin's checks read its machine code: what a person means by "the cubin".
    return texts.get("sass" if kind == "cubin" else kind)


def inspect_artifacts(checks: Sequence[ArtifactCheck], ptx: Path | None,
                      cubin: Path | None, *, kernel: str | None = None,
                      cuobjdump: str | None = None, compiled: Mapping[str, Any] | None = None,
                      budgets: ResourceBudget | None = None,
                      arch: str = "", where: str = "") -> StageResult:
    """The built module against the case: its kernel found by its C++ name, its PTX, SASS
    and embedded strings against the artifact checks, its kernels' resources (what the
    compiler reported) against the case's budget."""
    started = time.monotonic()
    compiled = compiled or {}
    ptx_text = ptx.read_text(errors="replace") if ptx and ptx.exists() else None
    details: dict[str, Any] = {}
    lines, failures, unavailable = [], [], ""
    if kernel:
        named = name_kernel(kernel, compiled, module_kernels(ptx_text, cubin))
        if isinstance(named, Failure):
            return StageResult("inspect", "error", named.reason, named.reason,
                               time.monotonic() - started)
        if named is not None:
            details[KERNEL_RECORD] = named.to_dict()
            found = "" if named.lowered == kernel else f": {named.signature} ({named.lowered})"
            lines.append(f"ok   kernel {kernel!r} is an entry of the module{found}")
    texts: dict[str, str | None] = {
        "ptx": ptx_text,
        # Read only when a check asks: every inspected cell would otherwise read its cubin.
        "strings": cubin_strings(cubin.read_bytes()) if cubin and cubin.exists()
        and any(c.kind == "strings" for c in checks) else None,
    }
    if any(c.kind in ("sass", "cubin") for c in checks) and cubin and cubin.exists():
        texts["sass"], unavailable = disassemble(cuobjdump, cubin)
    for check in checks:
        kind, pattern, present = check.kind, check.pattern, check.present
        text = _text_for(kind, texts)
        verb = "contains" if present else "lacks"
        if text is None and kind in ("sass", "cubin") and unavailable:
            # Which cubin could not be read: its toolkit and arch, for the skip's message.
            unavailable = f"{unavailable} (the {where} cubin)" if where else unavailable
            return StageResult("inspect", "unavailable", unavailable, unavailable,
                               time.monotonic() - started)
        if text is None:
            failures.append(f"no {kind} was produced to check that it {verb} /{pattern}/")
            continue
        hits = len(re.findall(pattern, text))
        ok = hits > 0 if present else hits == 0
        lines.append(f"{'ok  ' if ok else 'FAIL'} {kind} {verb} /{pattern}/ ({hits} matches)")
        if not ok:
            why = f" ({check.why})" if check.why else ""
            found = "lacks" if present else f"contains {hits} x"
            failures.append(f"artifact check failed: {kind} {found} /{pattern}/{why}")
    if budgets is not None:
        judged = judge_budget(budgets, compiled.get("resources", []), reporter(compiled, arch),
                              str(compiled.get("resources_missing", "")))
        if isinstance(judged, Failure):
            return StageResult("inspect", "error", judged.reason,
                               "\n".join([*lines, judged.reason]),
                               time.monotonic() - started, details)
        lines.extend(judged.lines)
        failures.extend(judged.broken)
    seconds = time.monotonic() - started
    log = "\n".join(lines + failures)
    if failures:
        return StageResult("inspect", "failed", failures[0], log, seconds, details)
    return StageResult("inspect", "ok", "", log, seconds, details)


def inspect_job(job: Job, ptx: Path | None, cubin: Path | None,
                compiled: Mapping[str, Any]) -> StageResult | None:
    """The inspect stage of a cell whose case asks anything of its module (a kernel, an
    artifact check, a budget), from a fresh compile or the compile cache alike; None when
    it asks nothing."""
    kernel = None if job.host_entry else job.kernel
    if not (job.artifacts or kernel or job.resources is not None):
        return None
    return inspect_artifacts(job.artifacts, ptx, cubin, kernel=kernel,
                             cuobjdump=job.cuobjdump,
                             compiled=compiled, budgets=job.resources, arch=job.arch,
                             where=" ".join(filter(None, (
                                 f"toolkit {job.env.toolkit}" if job.env else "", job.arch))))


def lowered_kernel(job: Job, inspected: StageResult | None) -> Job:
    """The job with its kernel as the module names it, for the load and run stages."""
    record = inspected.details.get(KERNEL_RECORD) if inspected else None
    return replace(job, kernel=record["lowered"]) if record else job
