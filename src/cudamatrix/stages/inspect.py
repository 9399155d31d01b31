"""The inspect stage: does the built artifact contain what the case says it must?

Exit codes miss a whole class of bug: CUTLASS built for plain sm_90 compiles
cleanly, carries no WGMMA, and aborts only at run time on the GPU. Checking
the PTX and cubin turns that into a build-time finding.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .result import StageResult


def inspect_artifacts(checks: Sequence[dict[str, Any]], ptx: Path | None,
                      cubin: Path | None) -> StageResult:
    started = time.monotonic()
    texts = {
        "ptx": ptx.read_text(errors="replace") if ptx and ptx.exists() else None,
        # cubins are ELF; latin-1 maps every byte, so embedded strings stay searchable.
        "cubin": cubin.read_bytes().decode("latin-1") if cubin and cubin.exists() else None,
    }
    lines = []
    failures = []
    for check in checks:
        kind, pattern, present = check["kind"], check["pattern"], check["present"]
        text = texts.get(kind)
        verb = "contains" if present else "lacks"
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
