"""The GPU runners a project's CI has: cudamatrix.toml's ``[runners.NAME]`` tables.

`cudamatrix plan` sends each cell to one runner. Without a table a project has one runner,
labelled ``gpu``, and every cell goes there: its GPU runs each arch natively or by the
driver's PTX JIT, and where it can do neither the run itself says so (no job waits for a
runner nobody has). A table maps archs and drivers to runners of their own: a cell goes
to a runner whose GPU runs its SASS, else to one whose driver can JIT its PTX; a cell no
runner serves is planned to build without a GPU, the reason said.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..common.versions import Arch, sass_runs_on
from ..errors import UserError

# A label as GitHub takes it in runs-on (and as a job's args carry it): no blank, no quote.
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+\-]*")


@dataclass(frozen=True)
class Runner:
    """One runner set-up: the labels a job asks for (beside every runner's own base
    labels), the arch of its GPU (None: unknown, it takes every cell) and the driver label
    it stands for (None: its own, whatever it is)."""

    name: str
    labels: tuple[str, ...]
    gpu: str | None = None
    driver: str | None = None


def serves(gpu: str | None, arch: str) -> str | None:
    """How a runner with `gpu` runs a cell built for `arch`: natively (its SASS), by the
    driver's PTX JIT (a newer GPU; an ``a`` arch's PTX runs on that very GPU only, an ``f``
    arch's on its family), or not at all (None). An unknown GPU takes every cell."""
    if gpu is None:
        return "natively"
    target, have = Arch.parse(arch), Arch.parse(gpu)
    if sass_runs_on(target, have):
        return "natively"
    if target.suffix == "a":
        return None
    if target.suffix == "f" and target.capability // 10 != have.capability // 10:
        return None
    return "by PTX JIT" if target.capability <= have.capability else None


def read_runners(table: Any, fail: Callable[[str, str], UserError]) -> tuple[Runner, ...]:
    """[runners.NAME] tables (their keys checked against the declaration by the caller)."""
    if not isinstance(table, dict):
        raise fail("runners", "expected [runners.NAME] tables")
    runners = []
    for name, entry in table.items():
        where = f"runners.{name}"
        if not isinstance(entry, dict):
            raise fail(where, "expected a table")
        labels = entry.get("labels")
        labels = [labels] if isinstance(labels, str) else labels
        if not labels or not isinstance(labels, list) or not all(
                isinstance(x, str) and LABEL.fullmatch(x) for x in labels):
            raise fail(f"{where}.labels", "expected runner labels (letters, digits, '.', '_', "
                       f"'+', '-'), got {labels!r:.80}")
        gpu = entry.get("gpu")
        if gpu is not None:
            try:
                Arch.parse(str(gpu))
            except ValueError as exc:
                raise fail(f"{where}.gpu", str(exc)) from None
        driver = entry.get("driver")
        if driver is not None and not (isinstance(driver, str) and LABEL.fullmatch(driver)):
            raise fail(f"{where}.driver", f"expected a driver label such as \"latest\", got "
                       f"{driver!r:.60}")
        runners.append(Runner(str(name), tuple(labels), gpu and str(gpu), driver))
    return tuple(runners)


def default_runners(drivers: Sequence[str], prefix: str = "") -> tuple[Runner, ...]:
    """A project that declares no runner: one, labelled ``gpu``; with driver labels asked
    for (`plan --driver`), that one runner per driver, ``driver-NAME`` beside it."""
    if not drivers:
        return (Runner("gpu", (f"{prefix}gpu",)),)
    return tuple(Runner(f"gpu-driver-{d}", (f"{prefix}gpu", f"{prefix}driver-{d}"), None, d)
                 for d in drivers)


def chosen_runners(declared: Sequence[Runner], drivers: Sequence[str], prefix: str = ""
                   ) -> tuple[Runner, ...]:
    """The runners a plan sends cells to: the declared ones (only those standing for the
    drivers asked for, where some are), else the default."""
    if not declared:
        return default_runners(drivers, prefix)
    if not drivers:
        return tuple(declared)
    for driver in drivers:
        if not any(r.driver == driver for r in declared):
            raise UserError(f"plan --driver {driver}: no runner of [runners] stands for it "
                            f"(driver = \"{driver}\"); runners: "
                            + ", ".join(f"{r.name} ({r.driver or 'its own driver'})"
                                        for r in declared))
    return tuple(r for r in declared if r.driver in drivers)


def assign(archs: Sequence[str], runners: Sequence[Runner]
           ) -> tuple[dict[tuple[str | None, str], list[str]], dict[str, str]]:
    """Per driver set-up, each arch's runner: one whose GPU runs it natively first, else one
    whose driver JITs its PTX, the first declared of either; ``{(driver, runner): archs}``,
    and each arch no runner of some set-up serves with the reason."""
    setups: dict[str | None, list[Runner]] = {}
    for runner in runners:
        setups.setdefault(runner.driver, []).append(runner)
    placed: dict[tuple[str | None, str], list[str]] = {}
    unserved: dict[str, str] = {}
    for driver, members in setups.items():
        for arch in archs:
            ways = [(serves(r.gpu, arch), r) for r in members]
            chosen = next((r for how, r in ways if how == "natively"), None) or next(
                (r for how, r in ways if how is not None), None)
            if chosen is None:
                unserved[arch] = (f"no runner of [runners] has a GPU that runs {arch}, natively "
                                  "or by PTX JIT (" + ", ".join(
                                      f"{r.name}: {r.gpu}" for r in members) + ")")
                continue
            placed.setdefault((driver, chosen.name), []).append(arch)
    return placed, unserved
