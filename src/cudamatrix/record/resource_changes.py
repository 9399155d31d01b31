"""Kernel resources across cells: what ptxas reported, read back from results.

A toolkit upgrade that makes a kernel spill, or take 20% more registers (fewer blocks
per SM), or more shared memory, passes every exit-code check. Every compiled cell
records its kernels' figures (the compile stage's ``resources``); here they are laid
side by side per case (toolkit x arch) and compared with a baseline's, as findings of
their own beside the outcome flips.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Registers up by more than this share of the baseline's count is a finding.
REGISTER_GROWTH = 0.10


@dataclass(frozen=True)
class ResourceChange:
    """One kernel of one cell whose figures moved the wrong way since the baseline."""

    cell: str
    kernel: str  # as its author writes it
    what: str  # "spill", "registers", "shared memory"
    before: int
    after: int

    def describe(self) -> str:
        if self.what == "spill":
            return (f"{self.kernel} starts to spill: {self.after} bytes of spill stores "
                    f"(was {self.before})")
        unit = "" if self.what == "registers" else " bytes"
        return f"{self.kernel}: {self.what} {self.before}{unit} -> {self.after}{unit}"


def kernel_label(record: Mapping[str, Any]) -> str:
    return str(record.get("name") or record.get("kernel", "?"))


def _by_kernel(records: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(r.get("kernel")): r for r in records if isinstance(r, Mapping)}


def _figure(record: Mapping[str, Any], key: str) -> int | None:
    """A recorded figure, or None where the record (an older or hand-made one) lacks it."""
    value = record.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def resource_changes(cell: str, before: Sequence[Mapping[str, Any]],
                     after: Sequence[Mapping[str, Any]]) -> list[ResourceChange]:
    """The kernels (matched by their name in the module) that start to spill, take more
    than 10% more registers, or more static shared memory than in the baseline."""
    changes = []
    old = _by_kernel(before)
    for name, now in _by_kernel(after).items():
        was = old.get(name)
        if was is None:
            continue
        label = kernel_label(now)
        spill_was, spill_now = _figure(was, "spill_store_bytes"), _figure(now, "spill_store_bytes")
        if spill_was == 0 and spill_now:
            changes.append(ResourceChange(cell, label, "spill", 0, spill_now))
        registers_was, registers_now = _figure(was, "registers"), _figure(now, "registers")
        if registers_was and registers_now and \
                registers_now > registers_was * (1 + REGISTER_GROWTH):
            changes.append(ResourceChange(cell, label, "registers", registers_was,
                                          registers_now))
        shared_was, shared_now = _figure(was, "smem_bytes"), _figure(now, "smem_bytes")
        if shared_was is not None and shared_now is not None and shared_now > shared_was:
            changes.append(ResourceChange(cell, label, "shared memory", shared_was, shared_now))
    return changes


def usage_text(record: Mapping[str, Any]) -> str:
    """One kernel's figures in a table cell: ``40 reg · 8 B spill · 4096 B smem``."""
    parts = [f"{record.get('registers', '?')} reg"]
    spilled = max(int(record.get("spill_store_bytes", 0) or 0),
                  int(record.get("spill_load_bytes", 0) or 0))
    if spilled:
        parts.append(f"{spilled} B spill")
    if record.get("stack_bytes"):
        parts.append(f"{record['stack_bytes']} B stack")
    if record.get("smem_bytes"):
        parts.append(f"{record['smem_bytes']} B smem")
    return " · ".join(parts)
