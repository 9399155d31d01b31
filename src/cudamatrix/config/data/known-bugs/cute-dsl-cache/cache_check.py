"""Does compiling the same CuTe DSL kernel twice hit the compile cache?

CUTLASS#2306: calling a @cute.jit function directly compiled it again on every
call (a mangled name changed between calls, so a second cache file appeared and
each call cost about 66 ms). CUTLASS#3398: cute.compile forces no_cache=True,
so its result is never cached at all. This script compiles one small kernel
twice along the chosen path, counts the cache artifacts and times both
compiles, then reports as JSON. It exits 1 with "cache miss: ..." when the
second compile did not reuse the first.

The path is chosen by argv[1]: "implicit" (call the @cute.jit function) or
"compile" (cute.compile). Without a GPU the implicit call compiles, writes its
cache entry and then fails to launch; the compile is what is measured here.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import cutlass
import cutlass.cute as cute

CACHE = Path(os.environ["CUTE_DSL_CACHE_DIR"])
WORK = Path(os.environ.get("CUDAMATRIX_WORKDIR", "."))


@cute.kernel
def fill_kernel(n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 0:
        cute.printf("fill n=%d\n", n)


@cute.jit
def launch(n: cutlass.Int32):
    fill_kernel(n).launch(grid=(1, 1, 1), block=(32, 1, 1))


def cache_files() -> list[str]:
    return sorted(p.name for p in CACHE.glob("*") if p.is_file()) if CACHE.exists() else []


def implicit_call() -> str | None:
    """Call the @cute.jit function; a failed launch (no GPU) after compiling is fine."""
    try:
        launch(cutlass.Int32(3))
    except Exception as exc:
        if "Driver" not in type(exc).__name__ + str(exc) and "driver" not in str(exc):
            raise
        return type(exc).__name__
    return None


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else "implicit"
    label = "implicit @cute.jit call" if path == "implicit" else "cute.compile"
    report: dict[str, object] = {"path": path, "arch": os.environ.get("CUTE_DSL_ARCH", "")}
    timings, counts = [], []
    launch_error = None
    compiled = None
    for _ in range(2):
        started = time.perf_counter()
        if path == "implicit":
            launch_error = implicit_call()
        else:
            compiled = cute.compile(launch, cutlass.Int32(3))
        timings.append(time.perf_counter() - started)
        counts.append(len(cache_files()))
    report.update(cold_s=round(timings[0], 4), warm_s=round(timings[1], 4),
                  cache_files_after_first=counts[0], cache_files_after_second=counts[1],
                  launch=launch_error or "ok")
    if compiled is not None:
        for kind, name in (("PTX", "kernel.ptx"), ("CUBIN", "kernel.cubin")):
            data = getattr(compiled.artifacts, kind, None)
            if data:
                target = WORK / name
                target.write_bytes(data if isinstance(data, bytes) else str(data).encode())
    print(json.dumps(report))
    if counts[0] == 0:
        print(f"cache miss: the first {label} wrote no cache artifact, so no later "
              f"compile can reuse it (warm {timings[1] * 1000:.1f} ms vs cold "
              f"{timings[0] * 1000:.1f} ms)", file=sys.stderr)
        return 1
    if counts[1] > counts[0]:
        print(f"cache miss: the second {label} wrote a new cache artifact "
              f"({counts[0]} -> {counts[1]})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
