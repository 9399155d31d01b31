"""CuPy's Jitify warm-up, once per CuPy version and toolkit, for every jitify cell.

The first ``RawModule(jitify=True)`` of a process compiles CuPy's own headers with
Jitify's compile-fail-search loop: one NVRTC compile per header it finds, each slower
than the last. Measured on the H100: CuPy 13.0.0 with CUDA 12.4 found 507 headers in
71 s; CuPy 13.6.0 (12.4) and 14.2.0 (13.0) had each found over 500 after 12.5 minutes at
about 2 s a compile, and were still going. CuPy keeps the result in ``$CUPY_CACHE_DIR``.

Done in every cell, it would cost each jitify cell that time (or its limit). So it runs
once, in a worker of its own that runs nothing of any case, under a limit of its own; the
warmed files are copied by this process into the run's cache, and each cell gets a copy
in its own CuPy cache (no cell can write what another reads). A warm-up that runs past
its limit is every such cell's result, with the stack it was stopped at.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..common.files import read_marker
from ..common.removal import emptied
from ..record.results import ARTIFACTS_DIR
from ..stages.cell.job import Job
from ..stages.cell.result import StageResult
from ..stages.frontends.cupy_run import JITIFY_CACHE

DONE_FILE = "warmed.json"


def _warmed_seconds(folder: Path) -> float | None:
    """How long the warm-up kept in `folder` took, or None where none finished there or its
    record is damaged (a KeyError or a JSONDecodeError on every later CuPy cell): warmed
    up again."""
    done = read_marker(folder / DONE_FILE)
    seconds = done.get("seconds") if isinstance(done, dict) else None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) \
            or not 0 <= seconds < 1e9:
        return None
    return float(seconds)


class JitifyWarmups:
    def __init__(self, cache: Path, out: Path, timeout: float,
                 execute: Callable[[Job], list[StageResult]],
                 note: Callable[[str], None]) -> None:
        self.root = cache / "cupy-jitify"
        self.out, self.timeout, self.execute, self.note = out, timeout, execute, note
        self._locks: dict[str, threading.Lock] = {}
        # Per key: the warmed folder, the time-out every cell shares, or None (no seed).
        self._outcome: dict[str, Path | StageResult | None] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(job: Job) -> str:
        library = job.library.version if job.library else "unknown"
        toolkit = job.env.toolkit if job.env else "bundled"
        provider = job.env.provider if job.env else "none"
        return f"cupy-{library}-cuda-{toolkit}-{provider}"

    def prepare(self, job: Job) -> Job | StageResult:
        """The cell's job with its seed of warmed headers, or the warm-up's time-out (a
        warm-up that failed otherwise leaves each cell to warm up, and fail, for itself)."""
        key = self.key(job)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._outcome:
                folder = self.root / key
                if _warmed_seconds(folder) is not None:
                    self._outcome[key] = folder
                else:
                    self._outcome[key] = self._warm(job, key, folder)
            outcome = self._outcome[key]
        if isinstance(outcome, StageResult):
            return outcome
        if outcome is None:
            return job
        seconds = _warmed_seconds(outcome)
        if seconds is None:  # removed or damaged since: the cell warms up for itself
            return job
        return replace(job, options={**job.options, "jitify_seed": str(outcome),
                                     "jitify_warmup_s": seconds})

    def _warm(self, job: Job, key: str, folder: Path) -> Path | StageResult | None:
        work = self.out / ARTIFACTS_DIR / f"_warmup-{key}"
        emptied(work)
        warmup = replace(job, workdir=str(work.resolve()), timeout=self.timeout, run=None,
                         kernel=None, options={**job.options, "jitify_warmup": True})
        self.note(f"{key}: Jitify warm-up (once; limit {self.timeout:.0f} s)")
        started = time.monotonic()
        result = self.execute(warmup)[0]
        seconds = round(time.monotonic() - started, 1)
        if result.status == "timeout":
            self.note(f"{key}: warm-up did not finish in {self.timeout:.0f} s")
            return replace(result, message="CuPy's one-time Jitify warm-up (shared by this "
                                           f"run's jitify cells): {result.message}",
                           details={**result.details, "jitify_warmup": key})
        if result.status != "ok":
            self.note(f"{key}: warm-up failed ({result.message}); cells warm up for themselves")
            return None
        staging = folder.with_name(folder.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for warmed in (work / "cupy-cache").glob(JITIFY_CACHE):
            if warmed.is_file() and not warmed.is_symlink():
                shutil.copyfile(warmed, staging / warmed.name)
        (staging / DONE_FILE).write_text(json.dumps({"seconds": seconds, "key": key}))
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
        self.note(f"{key}: warm-up done in {seconds} s")
        return folder
