"""A case's kernel name resolved by the cell's own compiler, as C++ resolves it.

A case names its kernel as its source writes it: ``act_and_mul_kernel<half, silu, 8>``.
The module holds ``void act_and_mul_kernel<__half, &(silu(float const&)), 8u>(...)``:
``half`` is a typedef, ``silu`` a function template argument, ``8`` an unsigned
parameter. Matching demangled text cannot know that; the compiler does. NVRTC is given the
name as a name expression. For nvcc and clang, a few lines beside the source take the
address of the name in device code::

    #include "/abs/path/k.cu"
    __device__ void* __cudamatrix_kernel_ref = (void*)&NAME;

and the device-only PTX of that (no ptxas, no host pass) initialises the variable with the
kernel's mangled name. An unknown or ambiguous name is the compiler's own error, quoted.
This runs only when the built module's kernels do not already hold the name as written
(its demangled text, with or without its template arguments): a name that reads the same
needs no second opinion, and most cells pay nothing.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from ..cell.job import Job
from ..inspect.kernel_names import (
    KERNEL_RECORD,
    KERNEL_REFUSED,
    KernelName,
    KernelNotFound,
    demangle,
    is_mangled,
    resolve,
)
from ..process.limits import run_tool
from .logs import decisive_line

# Which compiler refused the name, and how it was asked (NVRTC's record has none).
KERNEL_REFUSED_BY = "kernel_refused_by"
PROBE_SOURCE = "kernel-name.cu"
PROBE_PTX = "kernel-name.ptx"
_SYMBOL = "__cudamatrix_kernel_ref"
_REFERENCE = re.compile(rf"\.u64\s+{_SYMBOL}\s*=\s*(?:generic\()?([A-Za-z_$][\w$.]*)")


def probe_text(source: str, kernel: str) -> str:
    """The lines that ask the compiler which kernel `kernel` names."""
    return f'#include "{source}"\n__device__ void* {_SYMBOL} = (void*)&{kernel};\n'


def referenced(ptx_text: str) -> str | None:
    """The mangled name the probe's variable was initialised with."""
    found = _REFERENCE.search(ptx_text)
    return found.group(1) if found else None


def reads_the_same(kernel: str, entries: list[str]) -> bool:
    """Whether the module's kernels hold the name as written, without the compiler."""
    try:
        resolve(kernel, entries)
    except KernelNotFound:
        return False
    return True


def compiler_named(job: Job, entries: list[str] | None, timeout: float,
                   command: list[str]) -> dict[str, object]:
    """The compile stage's record of the case's kernel as the compiler resolved it
    (KERNEL_RECORD), or the compiler's refusal of the name (KERNEL_REFUSED); nothing
    where the name needs no compiler (none given, mangled, a host entry, or the module's
    kernels hold it as written). `command` is the frontend's probe line (its
    `command_lines` for the purpose "probe": the cell's compiler with every word that shapes
    the compile), making device-only PTX of PROBE_SOURCE into PROBE_PTX in the cell's
    folder."""
    kernel = job.kernel
    if not kernel or job.host_entry or is_mangled(kernel) or entries is None \
            or reads_the_same(kernel, entries):
        return {}
    source, ptx = job.work / PROBE_SOURCE, job.work / PROBE_PTX
    source.write_text(probe_text(str(Path(job.source).resolve()), kernel))
    started = time.monotonic()
    try:
        tool = run_tool(command, max(1.0, timeout), memory_bytes=job.memory_bytes,
                        cwd=job.work)
        lowered = referenced(ptx.read_text(errors="replace")) \
            if tool.code == 0 and ptx.is_file() else None
    finally:
        source.unlink(missing_ok=True)
        ptx.unlink(missing_ok=True)
    spent = round(time.monotonic() - started, 3)
    if lowered is None:
        said = decisive_line(tool.output) if tool.output.strip() else \
            f"the compiler took no address of {kernel!r}"
        return {KERNEL_REFUSED: said, KERNEL_REFUSED_BY: f"{Path(command[0]).name}, "
                "asked for its address", "kernel_probe_s": spent}
    return {KERNEL_RECORD: KernelName(kernel, lowered, demangle(lowered)).to_dict(),
            "kernel_probe_s": spent}
