"""The inspect stage: is the built module what the case says it must be?

Exit codes miss a whole class of bug: CUTLASS built for plain sm_90 compiles
cleanly, carries no WGMMA, and aborts only at run time on the GPU. Checking
the PTX, the machine code (SASS, disassembled) and the cubin's bytes turns that
into a build-time finding. A `kernel` the module does not define is caught here
too, before a GPU stage reports it as a load failure.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .logs import decode
from .result import StageResult

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
                              timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cuobjdump -sass failed: {exc}"
    text = decode(done.stdout)
    if done.returncode != 0 or "Function :" not in text:
        why = decode(done.stderr).strip().splitlines()
        return None, f"cuobjdump -sass could not disassemble it: {why[-1] if why else text[:200]}"
    return text, ""


def _kernel_missing(kernel: str | None, ptx_text: str | None) -> str | None:
    if not kernel or ptx_text is None:
        return None
    entries = entry_names(ptx_text)
    if kernel in entries:
        return None
    hint = ("; a C++ kernel is looked up by its mangled name: declare it extern \"C\" or give "
            "the mangled name" if any(kernel in e for e in entries) else "")
    return (f"case error: kernel {kernel!r} is not a kernel of the built module (its entries: "
            f"{', '.join(entries) or 'none'}){hint}")


def inspect_artifacts(checks: Sequence[dict[str, Any]], ptx: Path | None,
                      cubin: Path | None, *, kernel: str | None = None,
                      cuobjdump: str | None = None) -> StageResult:
    started = time.monotonic()
    ptx_text = ptx.read_text(errors="replace") if ptx and ptx.exists() else None
    missing = _kernel_missing(kernel, ptx_text)
    if missing:
        return StageResult("inspect", "error", missing, missing, time.monotonic() - started)
    texts: dict[str, str | None] = {
        "ptx": ptx_text,
        # The cubin's bytes: embedded strings (an abort message) are searchable as latin-1;
        # instructions are not, which is what "sass" is for.
        "cubin": cubin.read_bytes().decode("latin-1") if cubin and cubin.exists() else None,
    }
    lines, failures, unavailable = [], [], ""
    if kernel and ptx_text is not None:
        lines.append(f"ok   kernel {kernel!r} is an entry of the module")
    if any(c["kind"] == "sass" for c in checks) and cubin and cubin.exists():
        texts["sass"], unavailable = disassemble(cuobjdump, cubin)
    for check in checks:
        kind, pattern, present = check["kind"], check["pattern"], check["present"]
        text = texts.get(kind)
        verb = "contains" if present else "lacks"
        if text is None and kind == "sass" and unavailable:
            return StageResult("inspect", "unavailable", unavailable, unavailable,
                               time.monotonic() - started)
        if text is None:
            failures.append(f"no {kind} was produced to check that it {verb} /{pattern}/")
            continue
        hits = len(re.findall(pattern, text))
        ok = hits > 0 if present else hits == 0
        lines.append(f"{'ok  ' if ok else 'FAIL'} {kind} {verb} /{pattern}/ ({hits} matches)")
        if not ok:
            why = f" ({check['why']})" if check.get("why") else ""
            found = "lacks" if present else f"contains {hits} x"
            failures.append(f"artifact check failed: {kind} {found} /{pattern}/{why}")
    seconds = time.monotonic() - started
    log = "\n".join(lines + failures)
    if failures:
        return StageResult("inspect", "failed", failures[0], log, seconds)
    return StageResult("inspect", "ok", "", log, seconds)
