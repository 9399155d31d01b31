"""The driver's PTX JIT of the same files one after another and side by side (issue 81):

    python jit_side_by_side.py PROCESSES FOLDER...

Every PTX file under the FOLDERs (a run's --out, its compile cache), each once, whose
target is below this GPU's arch (what the run's loads JIT-compiled), is loaded with
cuModuleLoadData, the driver's JIT cache off (CUDA_CACHE_DISABLE=1): in one process, one
after the other; then in PROCESSES processes, each with its own context, taking the files
from one queue. Prints both walls, their ratio and the JIT's seconds summed, which the
floor counts as work.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path

os.environ["CUDA_CACHE_DISABLE"] = "1"  # before the driver starts: every load a real JIT


def _context() -> None:
    from cuda.bindings import driver as cu

    cu.cuInit(0)
    _, device = cu.cuDeviceGet(0)
    _, context = cu.cuDevicePrimaryCtxRetain(device)
    cu.cuCtxSetCurrent(context)


def _load(path: str) -> float:
    """One PTX file JIT-compiled and loaded, then unloaded: its seconds."""
    from cuda.bindings import driver as cu

    data = Path(path).read_bytes() + b"\0"
    began = time.monotonic()
    status, module = cu.cuModuleLoadData(data)
    seconds = time.monotonic() - began
    if status != cu.CUresult.CUDA_SUCCESS:
        return -1.0
    cu.cuModuleUnload(module)
    return seconds


def _gpu_arch() -> int:
    from cuda.bindings import driver as cu

    cu.cuInit(0)
    _, device = cu.cuDeviceGet(0)
    attribute = cu.CUdevice_attribute
    _, major = cu.cuDeviceGetAttribute(
        attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
    _, minor = cu.cuDeviceGetAttribute(
        attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
    return major * 10 + minor


def jit_files(folders: list[Path], arch: int) -> list[str]:
    """Each PTX below `arch` once (a cell's folder and the cache may both hold it)."""
    found: dict[bytes, str] = {}
    for path in sorted(p for folder in folders for p in folder.rglob("*.ptx")):
        text = path.read_bytes()
        target = re.search(rb"^\s*\.target\s+sm_(\d+)", text, re.M)
        if target and int(target.group(1)) < arch:
            found.setdefault(hashlib.sha256(text).digest(), str(path))
    return list(found.values())


def main() -> int:
    processes, folders = int(sys.argv[1]), [Path(a) for a in sys.argv[2:]]
    files = jit_files(folders, _gpu_arch())
    if not files:
        print(f"no PTX below this GPU's arch under {folders}")
        return 1
    spawn = multiprocessing.get_context("spawn")
    with spawn.Pool(1, initializer=_context) as one:
        one.apply(time.sleep, (0,))  # its context made before the clock starts
        began = time.monotonic()
        serial = one.map(_load, files, chunksize=1)
        serial_wall = time.monotonic() - began
    with spawn.Pool(processes, initializer=_context) as many:
        many.map(time.sleep, [0.2] * processes, chunksize=1)  # every context made first
        began = time.monotonic()
        side = many.map(_load, files, chunksize=1)
        side_wall = time.monotonic() - began
    failed = sum(1 for s in serial + side if s < 0)
    print(f"{len(files)} PTX files JIT-compiled (driver cache off), {failed} refused")
    print(f"one process, one after another: {serial_wall:.2f} s "
          f"(the loads' own seconds {sum(s for s in serial if s > 0):.2f})")
    print(f"{processes} processes side by side: {side_wall:.2f} s "
          f"(the loads' own seconds {sum(s for s in side if s > 0):.2f})")
    print(f"side by side against one after another: {serial_wall / side_wall:.2f}x")
    print(f"jit_work_s {sum(s for s in serial if s > 0):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
