"""A case's resource budget (``[variant.resources]``) against what the compiler reported.

ptxas says, per kernel, how many registers it used, how many bytes it spilled to local
memory and read back, its stack frame and its static shared memory (NVRTC with
``-Xptxas=-v``, nvcc with ``-Xptxas -v``, clang with ``-Xcuda-ptxas -v``); those
figures are parsed into the compile stage's ``resources``. A budget turns them into a
verdict: a toolkit upgrade that makes a kernel spill fails the inspect stage with the
figures, and a case can expect that (``stage = "inspect"``, ``match = "spill"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import Failure
from ..cell.specs import ResourceBudget
from .kernel_names import KernelNotFound, cpp_names, resolve

# Budget key -> (the resources record's field, how the message says it).
BUDGET_FIELDS: dict[str, tuple[str, str]] = {
    "max_registers": ("registers", "registers"),
    "max_spill_stores": ("spill_store_bytes", "bytes of spill stores"),
    "max_spill_loads": ("spill_load_bytes", "bytes of spill loads"),
    "max_stack": ("stack_bytes", "bytes of stack frame"),
    "max_shared": ("smem_bytes", "bytes of static shared memory"),
}
BUDGET_KEYS = (*BUDGET_FIELDS, "kernel")
# Why a figure can be missing: a built module's cubins record no spills (cuobjdump
# -res-usage reads registers, stack and shared memory); only ptxas -v prints them.
_SPILLS_FROM_PTXAS = (": a built module records no spills, only ptxas prints them (give "
                      "the compile --ptxas-options=-v)")
UNREPORTED = {"spill_store_bytes": _SPILLS_FROM_PTXAS, "spill_load_bytes": _SPILLS_FROM_PTXAS}


def with_ptxas_figures(resources: Sequence[Mapping[str, Any]],
                       ptxas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A built module's figures (cuobjdump's, per kernel and arch) with the spills ptxas
    printed for the same kernel and arch where its compile asked for them (-v): what a
    budget on spills is judged by; a kernel ptxas did not report keeps what it had."""
    spills = {(str(p.get("kernel")), str(p.get("arch"))): p for p in ptxas}
    merged = []
    for record in resources:
        said = spills.get((str(record.get("kernel")), str(record.get("arch"))), {})
        merged.append({**record, **{k: said[k] for k in ("spill_store_bytes",
                                                         "spill_load_bytes") if k in said}})
    return merged


@dataclass
class BudgetVerdict:
    lines: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)


def reporter(compiled: Mapping[str, Any], arch: str) -> str:
    """Who reported the figures, for the message: ``NVRTC 13.0, sm_80``."""
    for key, label in (("nvrtc", "NVRTC"), ("nvcc", "nvcc"), ("clang", "clang")):
        if key in compiled:
            return f"{label} {compiled[key]}, {arch}" if arch else f"{label} {compiled[key]}"
    return arch


def judge_budget(budget: ResourceBudget, resources: Sequence[Mapping[str, Any]],
                 said_by: str, missing: str = "") -> BudgetVerdict | Failure:
    """Each kernel's figures (or the one `kernel` names) against the budget's limits; or
    why a budget cannot be judged: no figures (`missing`: why, as the compile recorded
    it: its output cut, the compiler silent; no case is blamed for what it did not
    cause), or no such kernel."""
    kernels = {str(r["kernel"]): r for r in resources}
    if not kernels and missing:
        return Failure(f"[variant.resources] has no figures to judge ({said_by}): {missing}")
    if not kernels:
        return Failure("case error: [variant.resources] has no figures to judge: the "
                       "compiler reported no kernel's resource usage (a module without "
                       "kernels, or one built by a compiler that does not say it)")
    if budget.kernel is not None:
        try:
            chosen = [resolve(budget.kernel, list(kernels)).lowered]
        except KernelNotFound as exc:
            return Failure(f"[variant.resources] {exc}")
    else:
        chosen = list(kernels)
    labels = dict(zip(kernels, cpp_names(list(kernels)), strict=True))
    verdict = BudgetVerdict()
    limits = budget.limits()
    for name in chosen:
        record, short = kernels[name], labels[name]
        for key, (field_name, words) in BUDGET_FIELDS.items():
            if key not in limits:
                continue
            if field_name not in record:  # a limit left unjudged passed as if kept
                return Failure(f"[variant.resources] {key}: {said_by} gives no {words} for "
                               f"{short}{UNREPORTED.get(field_name, '')}")
            value, limit = int(record[field_name]), limits[key]
            if value > limit:
                verdict.broken.append(f"{short}: {value} {words} > {key} {limit} ({said_by})")
                verdict.lines.append(f"FAIL {short}: {words} {value} > {key} {limit}")
            else:
                verdict.lines.append(f"ok   {short}: {words} {value} <= {key} {limit}")
    return verdict
