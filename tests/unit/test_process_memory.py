"""The device memory a GPU server's process holds, read per process through NVML
(stages/device/process_memory.py): where nvidia-ml-py, the GPU or the process's entry
cannot be found it says so (None), and the server's GPU keeps that one server."""

from __future__ import annotations

from cudamatrix.stages.device.process_memory import ProcessMemory


def test_no_gpu_or_no_library_is_no_figure() -> None:
    """A machine without the driver or nvidia-ml-py (this lane), or a GPU NVML does not
    know: None, never an exception the server would die of."""
    assert ProcessMemory("GPU-00000000-0000-0000-0000-000000000000").used() is None
