"""Reading compiler output: the decisive line, the arch refusals, the resource usage."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from ...errors import Failure

_NOISE = re.compile(
    r"(\d+ errors? detected in the compilation|Ptx assembly aborted due to errors"
    r"|compilation (failed|terminated)|^\s*$)", re.IGNORECASE)
_ERROR = re.compile(r"\b(error|fatal|abort|Assertion|exception)\b", re.IGNORECASE)

_FUNCTION = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?")
# ptxas's own word for the arch it compiles an entry for: "... '_Z1kPf' for 'sm_90a'".
_ENTRY_ARCH = re.compile(r"Compiling entry function '?[\w$]+'? for '(sm_\w+)'")
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
    return list(_error_lines(log))


@functools.lru_cache(maxsize=1024)
def _error_lines(log: str) -> tuple[str, ...]:
    """Remembered per log: a cell's verdict, its diagnosis and its report each read the
    same log's errors (a CUTLASS log runs to megabytes, a nightly run has hundreds)."""
    log = _ANSI.sub("", log)
    return tuple(ln.strip() for ln in log.splitlines()
                 if _ERROR.search(ln) and not _NOISE.search(ln) and not ln.startswith("$ "))


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
    """Per-kernel registers, static shared memory and spills from ``ptxas -v`` output (one
    record per kernel: where several archs' lines are there, the last one's)."""
    figures = PtxasFigures()
    for line in ptxas_log.splitlines():
        figures.feed(line)
    return figures.merged()


@dataclass
class PtxasFigures:
    """ptxas's per-kernel figures, read line by line off a compiler's whole output
    (limits.run_tool's `reader`), each kept under the arch it is for: the one ptxas names
    on its entry line (``Compiling entry function 'k' for 'sm_90'``), else the arch of
    the nvcc step (``#$ ptxas -arch=sm_90``) it was printed under, else none known.
    Read before the output is cut, so no cut can hand one arch's figures to another (a
    six-arch mamba build printed past 2 x 256 KiB: the cut took sm_90's trace line,
    and sm_89 got sm_90's spills)."""

    kernels: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    _step_arch: str = ""
    _arch: str = ""
    _current: tuple[str, str] | None = None

    def feed(self, line: str) -> None:
        """One line of the output, in order."""
        if line.startswith(NVCC_TRACE):
            step = _step_arch(line[len(NVCC_TRACE):])
            self._step_arch = f"sm_{step}" if step else ""
            self._arch, self._current = self._step_arch, None
            return
        function = _FUNCTION.search(line)
        if function:
            named = _ENTRY_ARCH.search(line)
            if named:
                self._arch = named.group(1)
            self._current = (self._arch, function.group(1))
            self.kernels.setdefault(self._current, {"kernel": function.group(1)})
            return
        if self._current is None:
            return
        record = self.kernels[self._current]
        used = _USED.search(line)
        if used:
            record["registers"] = int(used.group(1))
            record["smem_bytes"] = int(used.group(3) or 0)
        spill = _SPILL.search(line)
        if spill:
            record["stack_bytes"] = int(spill.group(1))
            record["spill_store_bytes"] = int(spill.group(2))
            record["spill_load_bytes"] = int(spill.group(3))

    def archs(self) -> list[str]:
        """The archs some kernel's figures are known for, in the order ptxas printed them
        ("" for figures of no known arch)."""
        return list(dict.fromkeys(arch for (arch, _), record in self.kernels.items()
                                  if "registers" in record))

    def for_arch(self, arch: str) -> list[dict[str, Any]]:
        """The kernels ptxas reported for `arch` (``sm_90a``), each with that arch."""
        return [{**record, "arch": arch} for (of, _), record in self.kernels.items()
                if of == arch and "registers" in record]

    def merged(self) -> list[dict[str, Any]]:
        """One record per kernel whatever its arch, the last printed winning: what a log of
        one arch, or of archs nobody can tell apart, gives."""
        by_name: dict[str, dict[str, Any]] = {}
        for record in self.kernels.values():
            by_name.setdefault(record["kernel"], {}).update(record)
        return [record for record in by_name.values() if "registers" in record]

    def missing(self, arch: str) -> str:
        """Why `arch` has no figures, said for a budget that cannot be judged."""
        known = [a for a in self.archs() if a and a != arch]
        if known:
            return (f"ptxas reported kernels' figures for {', '.join(known)} in the same "
                    f"compile, none for {arch}")
        return ("the compiler printed no kernel's resource usage (ptxas -v) in its whole "
                "output: a module without kernels?")


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


# nvcc -v: each step's command, then what the step printed.
NVCC_TRACE = "#$ "
# The arch a step is for: cicc's `-arch compute_90a`, ptxas's `-arch=sm_90a`, nvlink's
# `--arch=sm_90a`; the device preprocessing's by the macros nvcc defines for it
# (`-D__CUDA_ARCH__=900 -D__CUDA_ARCH_FEAT_SM90_ALL ... -E`: sm_90a). The host compile
# (`-c`) may define __CUDA_ARCH__ too (13.0 does): it is every arch's.
_STEP_ARCH = re.compile(r"(?:^|\s)--?arch[= ](?:compute|sm)_(\w+)")
_DEVICE_PREPROCESS = re.compile(r"\s-D__CUDA_ARCH__=(\d+)\s.*\s-E\s")
_ARCH_SPECIFIC = re.compile(r"\s-D__CUDA_ARCH_(?:SPECIFIC__=|FEAT_SM\d+_ALL\b)")
_FAMILY_SPECIFIC = re.compile(r"\s-D__CUDA_ARCH_FAMILY_SPECIFIC__=")


def _step_arch(command: str) -> str | None:
    """The arch an nvcc step is for, as `archs` spell it after ``sm_`` (``90a``); None
    for a step of every arch's."""
    named = _STEP_ARCH.search(command)
    if named:
        return named.group(1)
    device = _DEVICE_PREPROCESS.search(command)
    if device is None:
        return None
    suffix = "a" if _ARCH_SPECIFIC.search(command) \
        else "f" if _FAMILY_SPECIFIC.search(command) else ""
    return f"{int(device.group(1)) // 10}{suffix}"


def split_nvcc_trace(output: str, archs: list[str]
                     ) -> tuple[dict[str, str], str | None] | Failure:
    """What one nvcc for several archs (``nvcc -v``) printed, as each arch's build alone
    would have printed it: the lines of the steps for every arch (the host pass, the
    fatbinary, the link) and of that arch's own steps (its preprocessing, cicc, ptxas and
    device link), the trace itself left out; and the arch of its last step (None: a step
    of every arch's), the one that failed when nvcc did. Or why it cannot be split: nvcc
    speaking outside any step, or a step for an arch not asked for. `archs` are names
    (``sm_90a``)."""
    keys = {arch.removeprefix("sm_"): arch for arch in archs}
    steps: list[tuple[str, list[str]]] = []
    for line in output.splitlines():
        if line.startswith(NVCC_TRACE):
            steps.append((line[len(NVCC_TRACE):], []))
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            return Failure(f"nvcc printed outside its steps: {line.strip()[:200]}")
    owners: list[str | None] = []  # None: every arch's step
    for command, _ in steps:
        key = _step_arch(command)
        if key is not None and key not in keys:
            return Failure(f"an nvcc step for {key}, not asked for: {command[:200]}")
        owners.append(None if key is None else keys[key])
    parts = {arch: "\n".join(line for (_, printed), owner in zip(steps, owners, strict=True)
                             if owner in (None, arch) for line in printed)
             for arch in archs}
    return parts, owners[-1] if owners else None
