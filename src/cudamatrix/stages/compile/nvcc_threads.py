"""What one nvcc for several archs printed while it built them side by side (``--threads``),
told apart by arch only where that is certain.

Run one after another (`logs.split_nvcc_trace`), each step's output follows its own trace
line, so the arch of every line is the step's. With ``--threads`` nvcc sends each step's
output to a file and prints it when the step ends, in the order the steps end: measured
with nvcc 13.0 (tests/data/logs/nvcc-13.0-threads-*.log), one arch's ptxas figures come
under another arch's trace line, a cicc warning of sm_80's under sm_90's ptxas, and a
failed sm_75 cicc's error under sm_80's ptxas with nvcc's own `# --error` line. No
trace can then say whose a warning, an error or the failing step is.

So a threaded build's output is taken only when it holds nothing but ptxas's figures, in
blocks that each open with ptxas's ``N bytes gmem`` line and name their one arch on every
entry line, one block per ptxas step: each arch's part is then exactly the lines a build
one arch after another prints under that arch's steps. Anything else (a warning, an
error, a failed nvcc, a block of no or of two archs) is a `Failure`, and the group is
built again one arch after another (nvcc.compile_together), whose trace does say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...errors import Failure
from ..process.limits import KEPT_OUTPUT_BYTES
from .logs import NVCC_TRACE, PtxasFigures

# How a compile stage says the way its group was built (its details), and with how many
# threads: "grouped" (one nvcc, one arch after another), "threads" (one nvcc, --threads);
# a compile of one arch (its own nvcc) says neither. bench/ reads it to tell a group's
# share of one compile from an arch's own compile.
COMPILE_STRATEGY = "compile_strategy"
NVCC_THREADS = "nvcc_threads"
# Why a threaded build was built again one arch after another.
THREADS_FALLBACK = "threads_fallback"

_GMEM = re.compile(r"^ptxas info\s*: \d+ bytes gmem")
_PTXAS_LINE = re.compile(r"^(?:ptxas info\s*: |\s+\d+ bytes stack frame, )")
_ENTRY_ARCH = re.compile(r"Compiling entry function '?[\w$]+'? for '(sm_\w+)'")
_PTXAS_STEP = re.compile(r"^ptxas\b.*?\s-arch=(sm_\w+)")


@dataclass
class ThreadedOutput:
    """A line reader (process.limits.run_tool's `reader`) of a threaded nvcc's whole output,
    before any cut: its ptxas blocks, the archs of its ptxas steps, and the first line
    that is neither (what makes the output unsplittable)."""

    blocks: list[list[str]] = field(default_factory=list)
    ptxas_steps: list[str] = field(default_factory=list)
    stray: str = ""
    _open: bool = False

    def feed(self, line: str) -> None:
        if line.startswith(NVCC_TRACE):
            step = _PTXAS_STEP.match(line[len(NVCC_TRACE):].lstrip('"'))
            if step:
                self.ptxas_steps.append(step.group(1))
            self._open = False  # a block is one step's output, printed whole
            return
        if not line.strip():
            return
        if _GMEM.match(line):
            self.blocks.append([line])
            self._open = True
        elif self._open and _PTXAS_LINE.match(line):
            self.blocks[-1].append(line)
        elif not self.stray:
            self.stray = line.strip()[:200]

    def split(self, archs: list[str]) -> tuple[dict[str, str], PtxasFigures] | Failure:
        """Each arch's part of the output and the figures ptxas printed for it, as a build
        one arch after another gives them; or why the output cannot be told apart."""
        if self.stray:
            return Failure(f"nvcc printed more than ptxas's figures: {self.stray}")
        owners: dict[str, list[str]] = {}
        for block in self.blocks:
            named = {m.group(1) for line in block for m in [_ENTRY_ARCH.search(line)] if m}
            if len(named) != 1:
                return Failure(f"a ptxas output naming {len(named)} archs")
            arch = named.pop()
            if arch not in archs or arch in owners:
                return Failure(f"a ptxas output for {arch}, not one of each asked for")
            owners[arch] = block
        if sorted(owners) != sorted(self.ptxas_steps):
            return Failure(f"ptxas ran for {', '.join(self.ptxas_steps) or 'no arch'}; "
                           f"its figures name {', '.join(owners) or 'none'}")
        figures = PtxasFigures()
        parts: dict[str, str] = {}
        for arch in archs:
            block = owners.get(arch, [])
            figures.feed(f"{NVCC_TRACE}ptxas -arch={arch}")  # as its own step printed it
            for line in block:
                figures.feed(line)
            parts[arch] = _bounded("\n".join(block))
        return parts, figures


def _bounded(text: str) -> str:
    """A part no longer than a tool's kept output (its head and tail, the cut said by the
    line process.limits writes, so logs.cut_bytes reads it)."""
    data = text.encode()
    if len(data) <= 2 * KEPT_OUTPUT_BYTES:
        return text
    head = data[:KEPT_OUTPUT_BYTES].decode(errors="ignore")
    tail = data[-KEPT_OUTPUT_BYTES:].decode(errors="ignore")
    cut = len(data) - 2 * KEPT_OUTPUT_BYTES
    return f"{head}\n[... {cut} bytes of output cut ...]\n{tail}"
