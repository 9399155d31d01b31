"""The device memory a GPU server's process holds, read per process through NVML
(stages/device/process_memory.py): where the library or the process's entry cannot be
found it says so (None), and the server falls back to the GPU's free memory."""

from __future__ import annotations

import ctypes
import os
from typing import Any

from cudamatrix.stages.device.process_memory import ProcessMemory, _ProcessInfo


def test_the_process_entry_is_nvmls_own_layout() -> None:
    """nvmlProcessInfo_t: pid, 4 bytes of padding, the bytes used, two instance ids."""
    assert ctypes.sizeof(_ProcessInfo) == 24
    assert _ProcessInfo.usedGpuMemory.offset == 8


def test_no_gpu_or_no_library_is_no_figure() -> None:
    """A machine without the driver (this lane), or a GPU NVML does not know: None, never
    an exception the server would die of."""
    assert ProcessMemory("GPU-00000000-0000-0000-0000-000000000000").used() is None


class _Nvml:
    """nvmlDeviceGetComputeRunningProcesses_v3 as NVML documents it, over a list of
    (pid, bytes): a count too small for the list is answered NVML_ERROR_INSUFFICIENT_SIZE
    with the count needed; else the entries and their count. (This lane has no driver: the
    library's contract, not the reading under test, is what is stood in for.)"""

    def __init__(self, processes: list[tuple[int, int]]) -> None:
        self.processes = processes

    def __call__(self, device: object, count: Any, infos: Any) -> int:
        asked = count._obj  # the c_uint passed by reference
        if asked.value < len(self.processes):
            asked.value = len(self.processes)
            return 7
        for entry, (pid, used) in zip(infos, self.processes, strict=False):
            entry.pid, entry.usedGpuMemory = pid, used
        asked.value = len(self.processes)
        return 0


def _reading(processes: list[tuple[int, int]]) -> ProcessMemory:
    memory = ProcessMemory("GPU-00000000-0000-0000-0000-000000000000")
    memory._nvml = ctypes.CDLL(None)  # any loaded library: the reading asks _call alone
    memory._call = _Nvml(processes)
    return memory


def test_the_figure_is_this_processs_own_among_the_gpus_others() -> None:
    """With several servers on one GPU (executors/gpus.py) and cells' own processes beside
    them, the figure is this process's entry, not the first one the GPU lists."""
    others = [(pid, (pid + 1) << 20) for pid in range(2, 6) if pid != os.getpid()]
    memory = _reading([*others, (os.getpid(), 7 << 20)])
    assert memory.used() == 7 << 20
    assert memory.used(others[0][0]) == others[0][1]
    assert memory.used(1 << 30) is None  # a process the GPU does not list


def test_a_gpu_with_more_processes_than_first_asked_for_is_read_whole() -> None:
    """The list asked for holds 64 entries; a GPU with more (a busy shared machine) is
    asked again with the count NVML said it needs, and this process found among them."""
    crowd = [(100_000 + n, 1 << 20) for n in range(90)]
    assert _reading([*crowd, (os.getpid(), 9 << 20)]).used() == 9 << 20
