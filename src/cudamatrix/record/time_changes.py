"""Kernel time across runs: a timed cell (stages/device/timing.py) compared with a baseline's.

A kernel that got slower is a finding of its own beside outcome flips and resource
changes, but only where the change stands out of both runs' noise: a change larger
than 5% and larger than three times the two runs' combined relative noise (their root
sum of squares), so the same cell timed twice is never reported. Faster is said too.
Two figures measured differently (a cold L2 against a hot one) are not compared.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A change smaller than this share of the baseline's median is never a finding.
MIN_CHANGE = 0.05
# ... nor one within this many times the two runs' combined noise.
NOISE_FACTOR = 3.0


@dataclass(frozen=True)
class TimeChange:
    """One cell whose kernel's median time moved beyond its noise since the baseline."""

    cell: str
    before_us: float
    after_us: float
    noise: float  # the two runs' combined relative noise

    @property
    def slower(self) -> bool:
        return self.after_us > self.before_us

    def describe(self) -> str:
        ratio = self.after_us / self.before_us
        return (f"{'slower' if self.slower else 'faster'}: median {self.before_us:.2f} us "
                f"-> {self.after_us:.2f} us ({ratio:.2f}x; noise {self.noise:.1%})")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        return None
    return float(value)


def _figures(timing: Mapping[str, Any] | None) -> tuple[float, float, str] | None:
    """A timing's median, relative noise and L2 state; None where it holds no figure."""
    if not isinstance(timing, Mapping):
        return None
    median, noise = _number(timing.get("median_us")), _number(timing.get("noise"))
    if median is None or noise is None or median <= 0:
        return None
    return median, abs(noise), str(timing.get("l2", "cold"))


def time_change(cell: str, before: Mapping[str, Any] | None,
                after: Mapping[str, Any] | None) -> TimeChange | None:
    """The change of one cell's median time, where it is a finding (module docstring)."""
    old, new = _figures(before), _figures(after)
    if old is None or new is None or old[2] != new[2]:
        return None
    combined = math.hypot(old[1], new[1])
    change = abs(new[0] / old[0] - 1)
    if change <= MIN_CHANGE or change <= NOISE_FACTOR * combined:
        return None
    return TimeChange(cell, old[0], new[0], combined)


def recorded_timing(cell: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A baseline cell's (results.json's) run-stage timing, if it was timed."""
    for stage in cell.get("stages", []) or []:
        if isinstance(stage, Mapping) and stage.get("stage") == "run":
            details = stage.get("details")
            if isinstance(details, Mapping) and isinstance(details.get("timing"), Mapping):
                return details["timing"]  # type: ignore[no-any-return]
    return None
