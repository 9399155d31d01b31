"""An audit as a matrix: module x GPU arch x driver, each a cell like every other.

A cell's case is the file (``wheel!member``), its variant the module inside it, its arch
the GPU, its toolkit column the driver branch. It passes when the module loads there;
a module that cannot load is a ``fail``, unless GPUs were declared (``--expect-gpu``)
and this is not one of them: then it is ``xfail`` ("does not load, as declared"). On a
GPU machine, the cells of that GPU and driver carry the driver's own answer, and that
answer, not the prediction, is the verdict; a disagreement is flagged.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ... import __version__
from ...common.versions import Arch
from ...config.matrix import Matrix
from ...config.plan import Cell
from ...errors import UserError
from ...orchestrator.gpu import DeviceInfo, probe
from ...record.results import CellResult, RunInfo
from ...record.verdict import audit_verdict, unreadable_verdict
from ...stages.binaries.elf import UnreadableFile
from ...stages.binaries.facts import Cuobjdumps, Module, read_modules
from ...stages.binaries.inputs import members, resolve
from ...stages.cell.result import StageResult
from .predict import Driver, Prediction, driver_floor, predict

FRONTEND = "audit"


@dataclass(frozen=True)
class AuditOptions:
    inputs: tuple[str, ...]
    cache: Path
    gpus: tuple[str, ...] = ()  # default: the matrix's archs without a/f suffix
    drivers: tuple[str, ...] = ()  # default: the matrix's driver labels
    expect_gpus: tuple[str, ...] = ()
    measure: bool = True


def drivers_of(matrix: Matrix, wanted: Sequence[str]) -> list[Driver]:
    """Driver labels (``latest``), versions (``580.95``) or branches (``535``) as drivers."""
    found = []
    for value in wanted or list(matrix.drivers):
        version = matrix.drivers.get(value, value)
        cuda = matrix.driver_supports(version)
        if cuda is None:
            raise UserError(f"--driver {value}: unknown driver branch (known in "
                            f"{matrix.path}: {', '.join(matrix.driver_cuda)})")
        found.append(Driver(version.split(".")[0], cuda))
    return list(dict.fromkeys(found))


def gpus_of(matrix: Matrix, wanted: Sequence[str]) -> list[Arch]:
    names = list(wanted) or [a for a in matrix.archs if not Arch.parse(a).suffix]
    try:
        archs = [Arch.parse(name) for name in names]
    except ValueError as exc:
        raise UserError(f"--gpu: {exc}") from None
    suffixed = [a.name for a in archs if a.suffix]
    if suffixed:
        raise UserError(f"--gpu {suffixed[0]}: a GPU is sm_XX; '{suffixed[0][-1]}' names a "
                        "build target")
    return archs


def _cell(module: Module, gpu: Arch, driver: Driver, prediction: Prediction,
          expected: set[str], device: DeviceInfo, seconds: float,
          floor: str | None) -> CellResult:
    cell = Cell(module.file, module.name, driver.branch, gpu.name, FRONTEND)
    measured: bool | None = None
    on_this_gpu = device.present and device.arch == gpu.name \
        and device.driver.split(".")[0] == driver.branch
    if on_this_gpu:
        measured = module.measured == "loads"
    loads = prediction.loads if measured is None else measured
    message = prediction.reason
    if measured is not None and measured != prediction.loads:
        message = (f"measured on {device.name}: {'loads' if measured else 'does not load'} "
                   f"({module.measured}); predicted: {prediction.reason}")
    declared = not expected or gpu.name in expected
    verdict = audit_verdict(loads, declared, bool(expected),
                            prediction.reason if loads else message)
    facts = StageResult("inspect", "ok", module.describe(), "", 0.0, module.to_dict())
    load = StageResult("load", "ok" if loads else "failed", message, "", seconds,
                       {"via": prediction.via, "image": prediction.image,
                        "measured": measured, "driver_floor": floor}, via=prediction.via)
    comparison = None if measured is None else {
        "predicted": "loads" if prediction.loads else "refused",
        "measured": "loads" if measured else "refused", "agrees": measured == prediction.loads}
    return CellResult(
        cell=cell, outcome=verdict.outcome, stage=verdict.stage, reached=verdict.reached,
        message=verdict.message, reason=verdict.reason,
        expected="loads" if declared else "may not load", diagnosis=None,
        stages=(facts, load), seconds=seconds, title=module.describe(),
        device=device.to_dict() if device.present else None, prediction=comparison)


def _unreadable(name: str, why: str, gpu: Arch, driver: Driver) -> CellResult:
    """A file whose device code could not be read whole: an error, never a guess."""
    stage = StageResult("inspect", "error", why)
    verdict = unreadable_verdict(why)
    return CellResult(cell=Cell(name, "unreadable", driver.branch, gpu.name, FRONTEND),
                      outcome=verdict.outcome, stage=verdict.stage, reached=verdict.reached,
                      message=verdict.message, reason=verdict.reason, expected="loads",
                      diagnosis=None, stages=(stage,), seconds=0.0, title=name)


def run_audit(options: AuditOptions, matrix: Matrix, cuobjdump: str | Cuobjdumps,
              note: Callable[[str], None]) -> tuple[RunInfo, list[CellResult]]:
    started_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    started = time.monotonic()
    gpus, drivers = gpus_of(matrix, options.gpus), drivers_of(matrix, options.drivers)
    device = probe() if options.measure else DeviceInfo(reason="measurement turned off")
    loader = None
    if device.present:
        from ...stages.binaries.measure import DriverLoader

        loader = DriverLoader()
        own = matrix.driver_supports(device.driver)
        if own and device.driver.split(".")[0] not in {d.branch for d in drivers}:
            drivers.append(Driver(device.driver.split(".")[0], own))
        note(f"GPU: {device.name} {device.arch}, driver {device.driver}: images are loaded")
    else:
        note(f"GPU: none ({device.reason}): predictions only")
    expected = set(options.expect_gpus)
    results: list[CellResult] = []
    unreadable: list[str] = []
    read = 0
    with tempfile.TemporaryDirectory(prefix="cudamatrix-audit-") as scratch:
        for spec in options.inputs:
            path = resolve(spec, options.cache)
            for member in members(path, Path(scratch)):
                began = time.monotonic()
                name = f"{member.source}!{member.name}"
                try:
                    if member.problem:
                        raise UnreadableFile(member.problem)
                    modules = read_modules(member.path, name, cuobjdump,
                                           loader.load if loader else None)
                except UnreadableFile as exc:
                    note(f"{name}: {exc}")
                    unreadable.append(f"{name}: {exc}")
                    results += [_unreadable(name, str(exc), gpu, driver)
                                for gpu in gpus for driver in drivers]
                    continue
                read += len(modules)
                older = sorted({m.read_by for m in modules if m.read_by})
                note(f"{name}: {len(modules)} CUDA module(s)" + (
                    f" ({', '.join(older)} read what the newest cuobjdump could not)"
                    if older else ""))
                seconds = time.monotonic() - began
                for module in modules:
                    for gpu in gpus:
                        # The same for every driver: worked out once per module and GPU.
                        floor = driver_floor(matrix, module, gpu)
                        for driver in drivers:
                            results.append(_cell(module, gpu, driver,
                                                 predict(matrix, module, gpu, driver),
                                                 expected, device, seconds, floor))
    if unreadable and not read:  # nothing but damage: one line says what and where
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        raise UserError(f"{unreadable[0]}{more}: no CUDA module could be read")
    if not results:
        raise UserError(f"{', '.join(options.inputs)}: no CUDA module found (no cubin or PTX "
                        "in any ELF file)")
    info = RunInfo(
        started=started_at, finished=datetime.now(UTC).replace(
            microsecond=0).isoformat(),
        tier="audit", provider="none", provider_choice="audit: no compile",
        host=f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()})",
        tool_version=__version__, device=device.to_dict(),
        command=" ".join(["cudamatrix", *sys.argv[1:]]),
        wall_seconds=round(time.monotonic() - started, 2))
    return info, results

