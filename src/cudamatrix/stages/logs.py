"""Reading compiler output: the decisive line, the arch refusals, the resource usage."""

from __future__ import annotations

import re
from typing import Any

_NOISE = re.compile(
    r"(\d+ errors? detected in the compilation|Ptx assembly aborted due to errors"
    r"|compilation (failed|terminated)|^\s*$)", re.IGNORECASE)
_ERROR = re.compile(r"\b(error|fatal|abort|Assertion|exception)\b", re.IGNORECASE)

_FUNCTION = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


# Terminal colours some tools print even into a pipe (the CuTe DSL's "error:").
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


_WARNING = re.compile(r"\bwarning\b", re.IGNORECASE)


_MISSING_INCLUDE = re.compile(
    r'cannot open source file "([^"]+)"|fatal error: ([^:\s]+): No such file or directory')


def missing_include(log: str) -> str | None:
    """The header the compiler's first error says it could not open, if that is the error."""
    errors = error_lines(log)
    match = _MISSING_INCLUDE.search(errors[0]) if errors else None
    return (match.group(1) or match.group(2)) if match else None


def decode(data: bytes) -> str:
    """Tool output as text whatever its encoding: an undecodable byte is shown, not fatal."""
    return data.decode("utf-8", errors="replace")


def warning_lines(log: str) -> list[str]:
    """What the tools warned about: kept in the cell, shown in the report, and what an
    expectation's ``warning`` pattern is matched against."""
    log = _ANSI.sub("", log)
    return [ln.strip()[:500] for ln in log.splitlines()
            if _WARNING.search(ln) and not _ERROR.search(ln)
            and not ln.lstrip().startswith(("Remark", "$ "))][:50]


def error_lines(log: str) -> list[str]:
    """The compilers' error lines; never the command line this tool logged above them
    (``$ nvrtc ... -I/cases/numba-error``), whose paths may say anything."""
    log = _ANSI.sub("", log)
    return [ln.strip() for ln in log.splitlines() if _ERROR.search(ln) and not _NOISE.search(ln)
            and not ln.startswith("$ ")]


def decisive_line(log: str) -> str:
    """The line a person would quote: the first real error, else the last line that is
    not a warning (a script's stated reason). A warning is never the decisive line: it
    did not decide anything, and an expectation's `match` must not be met by one."""
    errors = error_lines(log)
    if errors:
        return errors[0][:500]
    lines = [ln.strip() for ln in _ANSI.sub("", log).splitlines()
             if ln.strip() and not _WARNING.search(ln)]
    return lines[-1][:500] if lines else ""


def resource_usage(ptxas_log: str) -> list[dict[str, Any]]:
    """Per-kernel registers, static shared memory and spills from ``ptxas -v`` output."""
    kernels: dict[str, dict[str, Any]] = {}
    current: str | None = None
    for line in ptxas_log.splitlines():
        function = _FUNCTION.search(line)
        if function:
            current = function.group(1)
            kernels.setdefault(current, {"kernel": current})
            continue
        if current is None:
            continue
        used = _USED.search(line)
        if used:
            kernels[current]["registers"] = int(used.group(1))
            kernels[current]["smem_bytes"] = int(used.group(3) or 0)
        spill = _SPILL.search(line)
        if spill:
            kernels[current]["stack_bytes"] = int(spill.group(1))
            kernels[current]["spill_store_bytes"] = int(spill.group(2))
            kernels[current]["spill_load_bytes"] = int(spill.group(3))
    return [k for k in kernels.values() if "registers" in k]


_RES_ARCH = re.compile(r"^arch = (sm_\w+)", re.MULTILINE)
_RES_FUNCTION = re.compile(r"^\s*Function ([^\s:]+):\s*$")
_RES_FIGURES = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")


def cuobjdump_resource_usage(text: str) -> list[dict[str, Any]]:
    """Per kernel and SASS arch, the figures ``cuobjdump -res-usage`` reads from a built
    module's cubins (registers, stack, static shared and local memory; a cubin records no
    spill figures, which only ptxas prints)."""
    records: list[dict[str, Any]] = []
    arch, function = "", None
    for line in text.splitlines():
        if line.startswith("arch = "):
            found = _RES_ARCH.match(line)
            arch = found.group(1) if found else ""
            continue
        named = _RES_FUNCTION.match(line)
        if named:
            function = named.group(1)
            continue
        figures = _RES_FIGURES.search(line)
        if figures and function:
            registers, stack, shared, local = map(int, figures.groups())
            records.append({"kernel": function, "arch": arch, "registers": registers,
                            "stack_bytes": stack, "smem_bytes": shared, "local_bytes": local})
            function = None
    return records
