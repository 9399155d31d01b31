"""A case's tables as a cell's worker receives them: frozen, typed, every value given.

config/declarations.py declares each key of case.toml once (its type, default, allowed
values); the case reader (config/corpus.py, run_table.py, case_tables.py) fills in each
declared default there and builds these. No field here has a default of its own, so no
stage can read a key with a second default: the value a run uses is the declared one
(tests/unit/test_declared_defaults.py reads both). They travel to a worker inside the
job's JSON (`to_data` / `from_data`).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, TypeVar, Union


@dataclass(frozen=True)
class ArgumentSpec:
    """[[variant.run.args]]: one kernel argument, in launch order; a scalar (`value`) or
    an array (`shape`)."""

    name: str
    dtype: str
    value: float | None  # a scalar's value; None for an array
    shape: tuple[int, ...]  # an array's shape; () for a scalar
    output: bool
    inout: bool
    range: tuple[int, int]  # an integer array's random values, uniform in [low, high)
    fill: float | None
    values: tuple[float, ...] | None

    @property
    def scalar(self) -> bool:
        return self.value is not None


@dataclass(frozen=True)
class LaunchSpec:
    """[variant.run]: the launch, its arguments and the NumPy checks of its outputs."""

    args: tuple[ArgumentSpec, ...]
    grid: tuple[int, ...]
    block: tuple[int, ...]
    shared_bytes: int
    shared_opt_in: bool
    check: tuple[tuple[str, str], ...]  # (output, NumPy expression), in the file's order
    rtol: float
    atol: float
    seed: int
    host: bool


@dataclass(frozen=True)
class SlowdownBudget:
    """[variant.time] max_slowdown: at most `ratio` times the `toolkit` cell's median."""

    toolkit: str
    ratio: float


@dataclass(frozen=True)
class TimingSpec:
    """[variant.time]: how a kernel whose run passed is timed."""

    l2: str
    noise: float
    max_seconds: float
    max_us: float | None
    bytes: int | None
    max_slowdown: SlowdownBudget | None


@dataclass(frozen=True)
class ResourceBudget:
    """[variant.resources]: the most registers, spills, stack and shared memory a kernel
    (`kernel`, else each kernel of the module) may take; None: not judged."""

    max_registers: int | None
    max_spill_stores: int | None
    max_spill_loads: int | None
    max_stack: int | None
    max_shared: int | None
    kernel: str | None

    def limits(self) -> dict[str, int]:
        """The limits given, by key."""
        return {f.name: value for f in dataclasses.fields(self)
                if f.name != "kernel" and isinstance(value := getattr(self, f.name), int)}


@dataclass(frozen=True)
class BuildSpec:
    """[variant.build]: a project's own build, as the case declares it."""

    commands: tuple[str, ...]
    project: str | None
    outputs: tuple[str, ...]
    test: str | None
    requires: tuple[str, ...]
    env: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class BuildSetting:
    """What the run found for a build cell: the project's folder and how it is named,
    the build's own tools, the toolkit as ``$CUDA_HOME`` (empty for a prebuilt cell's
    test on a machine that never prepared its toolkit)."""

    project: str
    project_label: str
    tools_path: tuple[str, ...]
    tools_bin: tuple[str, ...]
    cuda_home: str


@dataclass(frozen=True)
class ArtifactCheck:
    """[[variant.artifact]]: a build passes only if its PTX or cubin contains (or lacks)
    a pattern.

    Exists because some toolchains succeed while emitting the wrong code:
    CUTLASS built for plain sm_90 drops every WGMMA instruction and compiles.
    """

    kind: str
    pattern: str
    present: bool
    why: str

    def describe(self) -> str:
        verb = "contains" if self.present else "lacks"
        return f"{self.kind} {verb} /{self.pattern}/"


Spec = TypeVar("Spec")


def to_data(spec: Any) -> Any:
    """A spec as JSON takes it (tuples become lists)."""
    return dataclasses.asdict(spec)


def from_data(kind: type[Spec], data: Any) -> Spec:
    """A spec of `kind` again from `to_data`'s form, each field as its type says (a
    worker reads what the run wrote: the same release on both sides)."""
    hints = typing.get_type_hints(kind)
    return kind(**{f.name: _value(hints[f.name], data[f.name])
                   for f in dataclasses.fields(kind)})  # type: ignore[arg-type]


def _value(hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _value(inner[0], value)
    if origin is tuple:
        items = typing.get_args(hint)
        if len(items) == 2 and items[1] is Ellipsis:
            return tuple(_value(items[0], v) for v in value)
        return tuple(_value(h, v) for h, v in zip(items, value, strict=True))
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return from_data(hint, value)
    return value
