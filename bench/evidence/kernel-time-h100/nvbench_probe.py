"""Can cuda-bench (NVBench's Python package) time a kernel the device stage already holds,
in the GPU server's process, cell after cell? A saxpy of 4 MiB and one of 256 MiB, each
through cuda.bench and then through GpuSession.time, in one process (so
run_all_benchmarks is called twice). Run on the H100 from the repository root, with
cuda-bench 0.3.0 installed in /tmp/site:

    PYTHONPATH=/tmp/site:src python3 bench/evidence/kernel-time-h100/nvbench_probe.py

nvbench-probe.log holds what it printed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import numpy as np
from cuda.bindings import driver as cu

sys.path.insert(0, "src")
from cudamatrix.stages.device import GpuSession, _check

SOURCE = ('extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {'
          " int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }")


def main() -> None:
    with open("/tmp/saxpy.cu", "w") as handle:
        handle.write(SOURCE)
    subprocess.run(["/usr/local/cuda/bin/nvcc", "-cubin", "-arch=sm_90", "-o",
                    "/tmp/saxpy.cubin", "/tmp/saxpy.cu"], check=True)
    gpu = GpuSession()
    with open("/tmp/saxpy.cubin", "rb") as handle:
        module = _check("cuModuleLoadData", cu.cuModuleLoadData(handle.read()))
    function = _check("cuModuleGetFunction", cu.cuModuleGetFunction(module, b"saxpy"))
    started = time.time()
    import cuda.bench as bench
    print(f"import cuda.bench {time.time() - started:.2f} s; version {bench.__version__}")
    for n in (1 << 20, 1 << 26):
        y = gpu.upload(np.ones(n, np.float32))
        x = gpu.upload(np.ones(n, np.float32))
        holders = [np.asarray([int(y)], np.uint64), np.asarray([int(x)], np.uint64),
                   np.asarray([2.0], np.float32), np.asarray([n], np.int32)]
        pointers = np.asarray([h.ctypes.data for h in holders], np.uint64)

        def launch_on(stream: Any, n: int = n, pointers: Any = pointers) -> None:
            _check("cuLaunchKernel", cu.cuLaunchKernel(function, n // 256, 1, 1, 256, 1, 1, 0,
                                                       stream, pointers.ctypes.data, 0))

        def benchmark(state: Any, launch_on: Any = launch_on) -> None:
            state.exec(lambda launch: launch_on(
                cu.CUstream(launch.get_stream().__cuda_stream__()[1])))

        benchmark.__name__ = f"saxpy_{n}"
        try:
            bench.register(benchmark)
            path = f"/tmp/nvbench-{n}.json"
            started = time.time()
            bench.run_all_benchmarks(["probe", "--json", path, "--devices", "0"])
            print(f"run_all_benchmarks n={n}: {time.time() - started:.2f} s")
            with open(path) as handle:
                for entry in json.load(handle)["benchmarks"]:
                    for state in entry["states"]:
                        for summary in state.get("summaries", []):
                            if summary["tag"].startswith("nv/cold/time/gpu"):
                                print(entry["name"], summary["tag"], summary.get("data"))
        except (RuntimeError, OSError, ValueError) as exc:
            print(f"cuda.bench n={n}: {type(exc).__name__}: {exc}")
        for l2 in ("cold", "hot"):
            figure = gpu.time(lambda: launch_on(0), {"l2": l2})
            print(f"GpuSession.time n={n} {l2}: {figure}")


if __name__ == "__main__":
    main()
