"""The device memory this process holds on its GPU, as the driver's management library
(NVML, through nvidia-ml-py, the gpu extra's) counts it per process.

A GPU's server asks after each cell whether memory went missing since it started (a
context that grew for good is replaced). cuMemGetInfo answers for the whole GPU: with
several servers on one GPU (executors/gpus.py), every other server's context and every
other cell's buffers looked like this server's loss, and servers were replaced for
nothing (18 of 156 cells of a warm run on an H100). The process's own figure is asked
for here; None where nvidia-ml-py, the GPU or this process's entry cannot be found (a
container whose process ids are not the host's): the server then says so as it starts,
and its GPU keeps that one server, whose check the GPU's free memory keeps true.
"""

from __future__ import annotations

import os
from typing import Any


class ProcessMemory:
    """One GPU's per-process memory, by its UUID ("GPU-..."), read through NVML."""

    def __init__(self, uuid: str) -> None:
        self._nvml: Any = None
        self._device: Any = None
        try:
            import pynvml
        except ImportError:
            return
        try:
            pynvml.nvmlInit()
            self._device = pynvml.nvmlDeviceGetHandleByUUID(uuid)
        except pynvml.NVMLError:
            return
        self._nvml = pynvml

    def used(self, pid: int | None = None) -> int | None:
        """Bytes the process `pid` (this one by default) holds on the GPU; None where
        that cannot be read."""
        if self._nvml is None:
            return None
        pid = os.getpid() if pid is None else pid
        try:
            processes = self._nvml.nvmlDeviceGetComputeRunningProcesses(self._device)
        except self._nvml.NVMLError:
            return None
        for process in processes:
            if process.pid == pid:
                used = process.usedGpuMemory  # None where NVML has no figure
                return None if used is None else int(used)
        return None
