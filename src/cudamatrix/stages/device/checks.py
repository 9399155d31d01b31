"""A case's inputs and its NumPy reference check: NumPy alone, so a frontend that brings
its own NumPy (a CuPy environment) can use them without the driver bindings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cell.job import Job
from ..cell.result import Status
from ..cell.specs import ArgumentSpec
from .expressions import RefusedExpression, evaluate, parse_check


def scalar_argument(spec: ArgumentSpec) -> np.ndarray:
    """A scalar argument (`value`) as a 0-d array of its dtype: launched by value, and a
    name in the checks as README's saxpy writes it (``y = "a * x + y_in"``)."""
    return np.asarray(spec.value, dtype=np.dtype(spec.dtype))


def input_array(spec: ArgumentSpec, rng: np.random.Generator) -> np.ndarray:
    dtype = np.dtype(spec.dtype)
    if spec.values is not None:
        return np.asarray(spec.values, dtype=dtype).reshape(spec.shape)
    if spec.fill is not None:  # an output too: zeroed for an accumulating kernel, not poisoned
        return np.full(spec.shape, spec.fill, dtype=dtype)
    if spec.output:
        poisoned = np.empty(spec.shape, dtype=dtype)
        if dtype.kind == "f":
            poisoned.fill(np.nan)
        else:
            poisoned.view(np.uint8).fill(0xFF)
        return poisoned
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, size=spec.shape).astype(dtype)
    low, high = spec.range
    return rng.integers(low, high, size=spec.shape).astype(dtype)


@dataclass(frozen=True)
class Argument:
    """One kernel argument as launched: a scalar passed by value, or an array the launch
    gets a device copy of (`written`: read back after the launch, for the checks; `read`:
    the kernel reads it, as every array but a pure output)."""

    name: str
    value: np.ndarray
    scalar: bool
    written: bool
    read: bool = True


def case_arguments(job: Job) -> tuple[list[Argument], dict[str, np.ndarray]]:
    """The case's arguments in launch order, and every name its checks may use: each
    argument (scalars too) and each inout's input as ``NAME_in``. One reading for every
    path that launches (the driver API, CuPy), the same as the case reader's."""
    launch = job.run
    if launch is None:
        return [], {}
    rng = np.random.default_rng(launch.seed)
    arguments: list[Argument] = []
    named: dict[str, np.ndarray] = {}
    for spec in launch.args:
        if spec.scalar:
            named[spec.name] = scalar_argument(spec)
            arguments.append(Argument(spec.name, named[spec.name], True, False))
            continue
        named[spec.name] = input_array(spec, rng)
        if spec.inout:
            named[f"{spec.name}_in"] = named[spec.name].copy()
        arguments.append(Argument(spec.name, named[spec.name], False, spec.output or spec.inout,
                                  read=spec.inout or not spec.output))
    return arguments, named


def bytes_moved(arguments: list[Argument]) -> int:
    """What a launch moves at the least, where the case declares no `bytes`: every array
    it reads read once, every array it writes written once (an inout both)."""
    return sum(a.value.nbytes * (int(a.read) + int(a.written))
               for a in arguments if not a.scalar)


def compare_outputs(job: Job, arrays: dict[str, np.ndarray]
                    ) -> tuple[Status, str, str, dict[str, Any]]:
    if job.run is None:
        return "ok", "", "no check declared", {}
    rtol, atol = job.run.rtol, job.run.atol
    lines, worst = [], {}
    for name, expression in job.run.check:
        try:  # read when the case was read; read again here, as a worker trusts nothing
            tree = parse_check(expression, arrays)
        except RefusedExpression as exc:
            return "failed", f"check of {name} refused: {exc}", "", {}
        expected = np.asarray(evaluate(tree, arrays, np))
        actual = arrays[name].astype(np.float64)
        error = np.abs(actual - expected)
        limit = atol + rtol * np.abs(expected)
        bad = int(np.count_nonzero(~(error <= limit)))
        worst[name] = float(np.nanmax(error)) if error.size else 0.0
        lines.append(f"{name}: max |error| {worst[name]:.3g} (atol {atol}, rtol {rtol}), "
                     f"{bad} of {error.size} outside")
        if bad:
            return ("failed", f"wrong result: {bad} of {error.size} elements of {name} outside "
                    f"tolerance (max |error| {worst[name]:.3g})", "\n".join(lines),
                    {"max_abs_error": worst})
    return "ok", "", "\n".join(lines) or "no check declared", {"max_abs_error": worst}
