"""The device memory this process holds on its GPU, as the driver's management library
(NVML, libnvidia-ml, which every NVIDIA driver installs) counts it per process.

A GPU's server asks after each cell whether memory went missing since it started (a
context that grew for good is replaced). cuMemGetInfo answers for the whole GPU: with
several servers on one GPU (executors/gpus.py), every other server's context and every
other cell's buffers looked like this server's loss, and servers were replaced for
nothing (18 of 156 cells of a warm run on an H100). The process's own figure is asked
for here; None where the library, the GPU or this process's entry cannot be found (a
container whose process ids are not the host's), and the caller falls back to the GPU's.
"""

from __future__ import annotations

import ctypes
import os

NVML_SUCCESS = 0
NVML_ERROR_INSUFFICIENT_SIZE = 7


class _ProcessInfo(ctypes.Structure):
    """nvmlProcessInfo_t (v2): what nvmlDeviceGetComputeRunningProcesses_v3 fills."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


class ProcessMemory:
    """One GPU's per-process memory, by its UUID ("GPU-..."), read through NVML."""

    def __init__(self, uuid: str) -> None:
        self._nvml: ctypes.CDLL | None = None
        self._device = ctypes.c_void_p()
        try:
            nvml = ctypes.CDLL("libnvidia-ml.so.1")
            if nvml.nvmlInit_v2() != NVML_SUCCESS:
                return
            if nvml.nvmlDeviceGetHandleByUUID(uuid.encode(),
                                              ctypes.byref(self._device)) != NVML_SUCCESS:
                return
            self._call = nvml.nvmlDeviceGetComputeRunningProcesses_v3
        except (OSError, AttributeError):
            return
        self._nvml = nvml

    def used(self, pid: int | None = None) -> int | None:
        """Bytes the process `pid` (this one by default) holds on the GPU; None where
        that cannot be read."""
        if self._nvml is None:
            return None
        pid = os.getpid() if pid is None else pid
        count = ctypes.c_uint(64)
        for _ in range(3):  # the list can grow between the asking and the reading
            infos = (_ProcessInfo * count.value)()
            status = self._call(self._device, ctypes.byref(count), infos)
            if status == NVML_SUCCESS:
                for info in infos[:count.value]:
                    if info.pid == pid:
                        return int(info.usedGpuMemory)
                return None
            if status != NVML_ERROR_INSUFFICIENT_SIZE:
                return None
            count = ctypes.c_uint(count.value + 16)
        return None
