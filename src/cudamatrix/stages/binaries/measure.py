"""Loading each module through the driver, on the GPU this machine has.

``cuModuleLoadData`` on the module's whole fatbinary: the driver picks its SASS or JITs
its PTX exactly as when the library loads it. Needs cuda-bindings and a driver; the
audit runs without, predicting only.
"""

from __future__ import annotations

from typing import Any


class DriverLoader:
    """One context on device 0; `load` says "loads" or the driver's error name."""

    def __init__(self) -> None:
        from cuda.bindings import driver as cu

        self._cu = cu
        self._check(cu.cuInit(0))
        device = self._check(cu.cuDeviceGet(0))
        self._context = self._check(cu.cuDevicePrimaryCtxRetain(device))
        self._check(cu.cuCtxSetCurrent(self._context))

    def _check(self, result: Any) -> Any:
        status, *value = result
        if status != self._cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"CUDA driver: {status.name}")
        return value[0] if value else None

    def load(self, fatbin: bytes) -> str:
        status, module = self._cu.cuModuleLoadData(fatbin)
        if status != self._cu.CUresult.CUDA_SUCCESS:
            return str(status.name)
        self._cu.cuModuleUnload(module)
        return "loads"
