"""A machine without a driver, the gpu extra installed: no GPU, said why, never a traceback.

cuda-bindings 13 finds libcuda through cuda.pathfinder, which raises a RuntimeError
(DynamicLibNotFoundError) at the first driver call where no driver library loads; earlier
releases returned an error status. A compile-only runner, or a container started without
the GPU, with `cudamatrix[gpu]` installed ended every run and audit in that traceback."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

from cudamatrix.orchestrator.executors.gpus import visible_gpus
from cudamatrix.orchestrator.gpu import probe


def _installed(module: str) -> bool:
    """Whether a module can be imported here (find_spec raises where its parent is absent)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


class DynamicLibNotFoundError(RuntimeError):
    """What cuda.pathfinder raises where it finds no libcuda."""


def _bindings_whose_driver_does_not_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def cu_init(flags: int) -> tuple[object]:
        raise DynamicLibNotFoundError(
            '"cuda" is an NVIDIA driver library and can only be found via system search.')

    driver = types.ModuleType("cuda.bindings.driver")
    driver.cuInit = cu_init  # type: ignore[attr-defined]
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = driver  # type: ignore[attr-defined]
    cuda = types.ModuleType("cuda")
    cuda.bindings = bindings  # type: ignore[attr-defined]
    for name, module in (("cuda", cuda), ("cuda.bindings", bindings),
                         ("cuda.bindings.driver", driver)):
        monkeypatch.setitem(sys.modules, name, module)


def test_a_driver_library_that_does_not_load_is_no_gpu_said_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _bindings_whose_driver_does_not_load(monkeypatch)
    device = probe()
    assert not device.present
    assert device.reason.startswith("no NVIDIA driver on this machine")
    assert "can only be found via system search" in device.reason
    assert "\n" not in device.reason
    assert visible_gpus() == []


@pytest.mark.skipif(not _installed("cuda.bindings"),
                    reason="cuda-bindings is not installed here (the gpu extra)")
@pytest.mark.skipif(Path("/proc/driver/nvidia/version").exists(),
                    reason="this machine has an NVIDIA driver")
def test_the_real_bindings_on_a_machine_without_a_driver() -> None:
    device = probe()
    assert not device.present and "driver" in device.reason
    assert visible_gpus() == []
