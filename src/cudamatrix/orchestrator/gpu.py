"""Is there a GPU here, and which one? Asked once per run, through the driver API."""

from __future__ import annotations

import ctypes
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class DeviceInfo:
    """The GPU and driver a run saw; `name` is empty when there is none, with `reason`."""

    name: str = ""
    arch: str = ""
    driver: str = ""
    driver_cuda: str = ""
    memory_mib: int = 0
    reason: str = ""

    @property
    def present(self) -> bool:
        return bool(self.name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _driver_version_string() -> str:
    """The kernel-module version (e.g. 580.159.04), which cuDriverGetVersion does not give."""
    try:
        with open("/proc/driver/nvidia/version") as handle:
            for word in handle.read().split():
                parts = word.split(".")
                if len(parts) >= 2 and all(p.isdigit() for p in parts):
                    return word
    except OSError:
        pass
    # A container without /proc/driver: NVML (nvidia-ml-py, the gpu extra), as the load
    # stage reads the GPU's clocks.
    try:
        import pynvml
    except ImportError:
        return ""
    try:
        pynvml.nvmlInit()
        try:
            said = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return ""
    return said.decode() if isinstance(said, bytes) else str(said)


def initialised_driver() -> tuple[Any, str]:
    """cuda-bindings' driver API after cuInit, or None and why there is none: the one
    place a process first reaches the driver. cuda-bindings 13 finds libcuda through
    cuda.pathfinder, which raises (a RuntimeError) where no driver library loads, where
    earlier releases returned an error status: a compile-only runner or a container
    started without the GPU, with the gpu extra installed, ended every run in that
    traceback."""
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None, "no NVIDIA driver on this machine (libcuda.so.1 not found)"
        return None, "cuda-bindings is not installed (pip install 'cudamatrix[gpu]')"
    try:
        (status,) = driver.cuInit(0)
    except (RuntimeError, OSError) as exc:
        said = " ".join(str(exc).split()) or type(exc).__name__
        return None, f"no NVIDIA driver on this machine (the driver library did not load: {said})"
    if status != driver.CUresult.CUDA_SUCCESS:
        return None, f"no usable CUDA driver: cuInit returned {status.name}"
    return driver, ""


def probe() -> DeviceInfo:
    driver, why_not = initialised_driver()
    if driver is None:
        return DeviceInfo(reason=why_not)
    status, count = driver.cuDeviceGetCount()
    if status != driver.CUresult.CUDA_SUCCESS or count == 0:
        return DeviceInfo(reason="the CUDA driver sees no GPU")
    _, device = driver.cuDeviceGet(0)
    _, raw_name = driver.cuDeviceGetName(96, device)
    attribute = driver.CUdevice_attribute
    _, major = driver.cuDeviceGetAttribute(
        attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
    _, minor = driver.cuDeviceGetAttribute(
        attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
    _, memory = driver.cuDeviceTotalMem(device)
    _, version = driver.cuDriverGetVersion()
    name = raw_name.split(b"\0")[0].decode()
    return DeviceInfo(name=name, arch=f"sm_{major}{minor}", driver=_driver_version_string(),
                      driver_cuda=f"{version // 1000}.{(version % 1000) // 10}",
                      memory_mib=int(memory) // (1 << 20))


def run_device(gpu: bool) -> DeviceInfo:
    """The GPU a run's load and run stages use: the probe's answer, or none with --no-gpu."""
    return probe() if gpu else DeviceInfo(reason="GPU stages turned off (--no-gpu)")
