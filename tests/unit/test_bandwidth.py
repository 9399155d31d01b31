"""A timed cell's achieved bandwidth (issue 60, point 3): the bytes a launch moves (the
case's `bytes`, or every array read once and written once), over its median, against the
GPU's peak as NVBench computes it (two transfers a memory clock over the bus width)."""

from __future__ import annotations

import numpy as np
import pytest

from cudamatrix.reports.markdown import timing_text

checks = pytest.importorskip("cudamatrix.stages.device.checks")
timing = pytest.importorskip("cudamatrix.stages.device.timing")


def test_saxpy_moves_each_array_it_reads_and_writes() -> None:
    n = 64 << 20  # the 256 MiB saxpy: y inout, x in, a and n scalars
    y = np.zeros(n, dtype=np.float32)
    x = np.zeros(n, dtype=np.float32)
    arguments = [checks.Argument("y", y, False, True, read=True),
                 checks.Argument("x", x, False, False),
                 checks.Argument("a", np.float32(2.0).reshape(1), True, False),
                 checks.Argument("out", np.zeros(16, dtype=np.float64), False, True,
                                 read=False)]
    assert checks.bytes_moved(arguments) == 3 * (256 << 20) + 16 * 8


def test_an_h100s_peak_and_a_saxpys_share_of_it() -> None:
    # The H100 80GB HBM3's NVML figures: a 2619 MHz memory clock over a 5120-bit bus.
    peak = timing.peak_bandwidth_gbs(2619, 5120)
    assert peak == pytest.approx(3352.32, rel=1e-6)
    said = timing.bandwidth({"median_us": 250.0}, 3 * (256 << 20), peak)
    assert said["bandwidth_gbs"] == pytest.approx(3 * (256 << 20) / 250e-6 / 1e9, abs=0.01)
    assert said["bandwidth_fraction"] == pytest.approx(said["bandwidth_gbs"] / peak, abs=1e-4)
    assert timing.bandwidth({"median_us": 250.0}, 1024, None) == {
        "bytes": 1024, "bandwidth_gbs": round(1024 / 250e-6 / 1e9, 2)}
    assert timing.bandwidth({"median_us": 0.0}, 1024, peak) == {}


def test_the_reports_say_the_bandwidth() -> None:
    text = timing_text({"median_us": 250.0, "noise": 0.01, "converged": True,
                        "bandwidth_gbs": 3221.2, "bandwidth_fraction": 0.9609}, 250.0)
    assert text == "250.00 us ±1.0% · 3,221 GB/s (96% of peak)"
