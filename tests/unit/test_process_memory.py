"""The device memory a GPU server's process holds, read per process through NVML
(stages/device/process_memory.py, by nvidia-ml-py): where the library, the GPU or the
process's entry cannot be found it says so (None), and the server's GPU keeps that one
server (executors/gpus.py)."""

from __future__ import annotations

import os
import sys
import types
from dataclasses import dataclass

import pytest

from cudamatrix.stages.device.process_memory import ProcessMemory

UUID = "GPU-00000000-0000-0000-0000-000000000000"


def test_no_gpu_or_no_library_is_no_figure() -> None:
    """A machine without the driver or nvidia-ml-py (this lane), or a GPU NVML does not
    know: None, never an exception the server would die of."""
    assert ProcessMemory(UUID).used() is None


@dataclass
class _Entry:
    pid: int
    usedGpuMemory: int | None  # nvidia-ml-py's own field name


def _nvml(monkeypatch: pytest.MonkeyPatch, listed: list[_Entry]) -> None:
    """nvidia-ml-py as its documentation gives it, over a list of processes: this lane has
    no driver, so the library's answers are stood in for; the reading is under test."""
    module = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    def handle(uuid: str) -> str:
        if uuid != UUID:
            raise NVMLError("not found")
        return "device"

    module.NVMLError = NVMLError  # type: ignore[attr-defined]
    module.nvmlInit = lambda: None  # type: ignore[attr-defined]
    module.nvmlDeviceGetHandleByUUID = handle  # type: ignore[attr-defined]
    module.nvmlDeviceGetComputeRunningProcesses = (  # type: ignore[attr-defined]
        lambda device: list(listed))
    monkeypatch.setitem(sys.modules, "pynvml", module)


def test_the_figure_is_this_processs_own_among_the_gpus_others(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With several servers on one GPU and cells' own processes beside them, the figure is
    this process's entry, not the first one the GPU lists."""
    others = [_Entry(pid, (pid + 1) << 20) for pid in range(2, 6) if pid != os.getpid()]
    _nvml(monkeypatch, [*others, _Entry(os.getpid(), 7 << 20)])
    memory = ProcessMemory(UUID)
    assert memory.used() == 7 << 20
    assert memory.used(others[0].pid) == others[0].usedGpuMemory
    assert memory.used(1 << 30) is None  # a process the GPU does not list
    assert ProcessMemory("GPU-ffffffff-0000-0000-0000-000000000000").used() is None


def test_a_process_nvml_has_no_figure_for_is_no_figure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """NVML lists a process without its bytes where it cannot count them (some
    virtualised GPUs): that is no figure, not a process holding nothing, which would hide
    every leak of its server."""
    _nvml(monkeypatch, [_Entry(os.getpid(), None)])
    assert ProcessMemory(UUID).used() is None
