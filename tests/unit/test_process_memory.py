"""The device memory a GPU server's process holds, read per process through NVML
(stages/device/process_memory.py): where the library or the process's entry cannot be
found it says so (None), and the server falls back to the GPU's free memory."""

from __future__ import annotations

import ctypes

from cudamatrix.stages.device.process_memory import ProcessMemory, _ProcessInfo


def test_the_process_entry_is_nvmls_own_layout() -> None:
    """nvmlProcessInfo_t: pid, 4 bytes of padding, the bytes used, two instance ids."""
    assert ctypes.sizeof(_ProcessInfo) == 24
    assert _ProcessInfo.usedGpuMemory.offset == 8


def test_no_gpu_or_no_library_is_no_figure() -> None:
    """A machine without the driver (this lane), or a GPU NVML does not know: None, never
    an exception the server would die of."""
    assert ProcessMemory("GPU-00000000-0000-0000-0000-000000000000").used() is None
