"""How long a case's kernel takes on the GPU, once its run stage has passed.

What a kernel maintainer wants from a toolkit change is "did my kernel get slower", so
each sample is the GPU's own measure of one launch (CUDA events around it on one
stream), not the host's clock, and the figure reported is the median of enough samples
for its noise to be known. Cold L2 (the default) writes a buffer twice the L2's size
before each sample, so a kernel is never timed on the inputs the previous launch left in
the cache; `l2 = "hot"` times back-to-back launches instead.

The stop rule is NVBench's (sample until the relative standard deviation is under a
target, or a time budget is spent), measured here with CUDA events rather than through
cuda-bench, NVBench's Python package, because it cannot serve the GPU server: tried on
the H100 (bench/evidence/kernel-time-h100/nvbench_probe.py, nvbench-probe.log), cuda.bench
0.3.0 timed the cell's own module and arguments in the server's context (4 MiB saxpy,
cold: median 8.90 us; this stage: 9.02 us), but a second benchmark in the same process
is refused ("Can not register more benchmarks after benchmark was run"), and a server
times cell after cell in one process; a process per timed cell would bring back the
context per cell that the server removed. The clock and throttle state come with the
figure so a reader can tell a throttled GPU from a slower toolkit.

Pure statistics (`summary`, `enough`) live apart from the driver calls so that they are
tested without a GPU.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..cell.specs import TimingSpec

# Enough samples for a median to mean much (the noise target and the time budget are
# [variant.time]'s, their defaults declared in config/declarations.py).
MIN_SAMPLES = 10
MAX_SAMPLES = 100_000
# How many samples the record keeps for the page (evenly spaced beyond that).
KEPT_SAMPLES = 256


def noise(samples: Sequence[float]) -> float:
    """The samples' relative standard deviation (0 for fewer than two)."""
    if len(samples) < 2:
        return 0.0
    mean = statistics.fmean(samples)
    return statistics.stdev(samples) / mean if mean > 0 else 0.0


def enough(samples: Sequence[float], elapsed_s: float, settings: TimingSpec) -> bool:
    """Whether to stop sampling: the noise under its target after MIN_SAMPLES, or the
    time budget spent, or MAX_SAMPLES taken."""
    if len(samples) >= MAX_SAMPLES:
        return True
    if elapsed_s >= settings.max_seconds:
        return len(samples) >= 1
    return len(samples) >= MIN_SAMPLES \
        and noise(samples) <= settings.noise


def kept_samples(samples_us: Sequence[float]) -> list[float]:
    """The samples the record keeps for the page to draw, in the order they were taken (a
    drift or a throttled stretch shows as one): all of them up to KEPT_SAMPLES, else that
    many evenly spaced, so a 100,000-sample cell stays a few kilobytes."""
    step = max(1, -(-len(samples_us) // KEPT_SAMPLES))
    return [round(v, 3) for v in samples_us[::step]]


def sample_summary(samples_us: Sequence[float], settings: TimingSpec) -> dict[str, Any]:
    """What results.json records of a timing: the median (the figure compared between
    toolkits), the minimum, the noise, the count, whether the noise target was met, and
    the samples themselves (kept_samples) for the cell's panel."""
    target = settings.noise
    spread = noise(samples_us)
    return {"median_us": round(statistics.median(samples_us), 4),
            "min_us": round(min(samples_us), 4),
            "noise": round(spread, 5), "samples": len(samples_us),
            "converged": len(samples_us) >= MIN_SAMPLES and spread <= target,
            "l2": settings.l2,
            "samples_us": kept_samples(samples_us)}


def bandwidth(timing: Mapping[str, Any], moved: int, peak_gbs: float | None
              ) -> dict[str, Any]:
    """The achieved bandwidth of a timed launch that moves `moved` bytes (its median time),
    and its fraction of the GPU's peak where that is known: NVBench's "GlobalMem BW" and
    "BWUtil"."""
    median_s = float(timing["median_us"]) / 1e6
    if moved <= 0 or median_s <= 0:
        return {}
    achieved = moved / median_s / 1e9
    said: dict[str, Any] = {"bytes": moved, "bandwidth_gbs": round(achieved, 2)}
    if peak_gbs:
        said["peak_gbs"] = round(peak_gbs, 2)
        said["bandwidth_fraction"] = round(achieved / peak_gbs, 4)
    return said


def peak_bandwidth_gbs(memory_clock_mhz: float, bus_width_bits: int) -> float:
    """The GPU's peak global memory bandwidth as NVBench computes it: two transfers a
    memory clock (double data rate) over the bus's width."""
    return 2 * memory_clock_mhz * 1e6 * bus_width_bits / 8 / 1e9


def over_limit(timing: Mapping[str, Any], settings: TimingSpec) -> str:
    """The run's failure message where the case set max_us and the median is over it."""
    limit = settings.max_us
    if limit is None or timing["median_us"] <= float(limit):
        return ""
    return (f"too slow: median {timing['median_us']:.3f} us over max_us {limit} "
            f"({timing['samples']} samples, noise {timing['noise']:.2%})")


def sample(launch: Callable[[], None], measure: Callable[[Callable[[], None]], float],
           settings: TimingSpec) -> list[float]:
    """Samples of one launch each, in microseconds, after one warm-up launch: `measure`
    times what it is given on the GPU (and flushes the L2 first, untimed, for a cold one)."""
    launch()
    samples: list[float] = []
    start = time.monotonic()
    while not enough(samples, time.monotonic() - start, settings):
        samples.append(measure(launch))
    return samples
