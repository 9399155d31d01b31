"""The cell record and the run record: written as each cell finishes, read back by reports.

Every finished cell lands atomically in ``<out>/cells/<slug>.json`` (write to a
temporary name, then rename), so a run killed at any moment keeps every cell
it finished, and ``--resume`` or ``merge`` can pick them up again.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict, TypeVar

from ..common import recorded
from ..common.files import write_atomic
from ..common.versions import Arch
from ..config.plan import BUNDLED, Cell
from ..errors import UserError
from ..stages.cell.result import REACHED, STAGE_NAMES, Reached, Stage, StageResult
from .outcomes import OUTCOMES, Outcome
from .verdict_rules import is_flaky

SCHEMA_VERSION = 1
CELLS_DIR = "cells"
# Each cell's own folder of what its compile made (--out/artifacts/<cell slug>).
ARTIFACTS_DIR = "artifacts"


@dataclass(frozen=True)
class CellResult:
    cell: Cell
    outcome: Outcome
    stage: Stage
    reached: Reached
    message: str
    reason: str
    expected: str
    diagnosis: dict[str, Any] | None
    stages: tuple[StageResult, ...]
    seconds: float
    title: str = ""
    upstream: tuple[str, ...] = ()
    versions: dict[str, str] = field(default_factory=dict)
    device: dict[str, Any] | None = None
    prediction: dict[str, Any] | None = None
    # The case author's note on the expectation that decided the cell (why it is expected).
    note: str = ""
    # The cell's earlier attempts (--retries), oldest first, each as attempt_said says it:
    # a cell not as its case expects is run again where the user asks.
    attempts: tuple[dict[str, Any], ...] = ()

    @property
    def flaky(self) -> bool:
        """Whether the cell's attempts disagree, one of them as its case expects: the
        verdict's rule (verdict_rules.is_flaky), read wherever the record is."""
        return is_flaky(self.outcome, self.stage, self.attempts)

    def attempt_said(self) -> dict[str, Any]:
        """This result as an earlier attempt of a cell is kept: what decided it, not its logs
        (the last attempt's stages are the cell's)."""
        return {"outcome": self.outcome, "stage": self.stage, "message": self.message,
                "seconds": round(self.seconds, 3)}

    def _compiled(self, key: str) -> list[Any]:
        """A list the compile stage recorded about the build (empty without one)."""
        for stage in self.stages:
            if stage.stage == "compile":
                return list(stage.details.get(key, []))
        return []

    @property
    def resources(self) -> list[dict[str, Any]]:
        """Each kernel's resource usage: ptxas's figures from the compile (registers, shared
        memory, stack, spills), or for a build's modules cuobjdump's from the inspect."""
        compiled = self._compiled("resources")
        if compiled:
            return compiled
        for stage in self.stages:
            if stage.stage == "inspect" and isinstance(stage.details.get("resources"), list):
                return list(stage.details["resources"])
        return []

    @property
    def kernel(self) -> dict[str, str] | None:
        """The case's kernel as it was found in the module: the name the case wrote, the
        name in the module (what the load and run stages used) and its C++ signature."""
        for stage in self.stages:
            # An inspect stage that looked for no kernel records `"kernel": null`.
            if stage.stage == "inspect" and isinstance(stage.details.get("kernel"), dict):
                return dict(stage.details["kernel"])
        return None

    @property
    def timing(self) -> dict[str, Any] | None:
        """How long the case's kernel took on the GPU ([variant.time], stages/device/timing.py):
        median and minimum microseconds, noise, samples, L2 state, clocks."""
        for stage in self.stages:
            if stage.stage == "run" and isinstance(stage.details.get("timing"), dict):
                return dict(stage.details["timing"])
        return None

    @property
    def gpu_name(self) -> str:
        """The GPU the cell's kernel ran on, by name (its kind): the load stage's GPU where a
        GPU server recorded one, else the run's device; empty where none ran it."""
        for stage in self.stages:
            gpu = stage.details.get("gpu") if stage.stage == "load" else None
            if isinstance(gpu, dict) and isinstance(gpu.get("name"), str):
                return str(gpu["name"])
        return str((self.device or {}).get("name") or "")

    @property
    def ships(self) -> list[dict[str, Any]]:
        """What the build ships: its cubin's and PTX's facts (arch, ISA, size, kernels)."""
        return self._compiled("ships")

    @property
    def warnings(self) -> list[str]:
        """What the compilers warned about: shown with the cell, never a verdict by itself."""
        return self._compiled("warnings")

    @property
    def log(self) -> str:
        return "\n".join(f"== {s.stage}: {s.status}\n{s.log}".rstrip() for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.cell.id,
            "case": self.cell.case,
            "variant": self.cell.variant,
            "toolkit": self.cell.toolkit,
            "arch": self.cell.arch,
            "frontend": self.cell.frontend,
            "library": self.cell.library,
            "library_version": self.cell.library_version,
            "runner": self.cell.runner,
            "host_compiler": self.cell.host_compiler,
            # Only where set: a cell without the axis keeps the record it had.
            **({"python": self.cell.python} if self.cell.python else {}),
            "outcome": self.outcome,
            "stage": self.stage,
            "reached": self.reached,
            "message": self.message,
            "reason": self.reason,
            "expected": self.expected,
            "note": self.note,
            "diagnosis": self.diagnosis,
            "resources": self.resources,
            "kernel": self.kernel,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "title": self.title,
            "upstream": list(self.upstream),
            "versions": self.versions,
            "device": self.device,
            "prediction": self.prediction,
            "attempts": [dict(a) for a in self.attempts],
            "flaky": self.flaky,
            "stages": [s.to_dict() for s in self.stages],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CellResult:
        """A recorded cell, each field of the type the reports read (recorded.py); a field
        of another type, an unknown outcome or an arch that is none is a ValueError naming
        it."""
        if not isinstance(data, dict):
            raise ValueError(f"a cell record is an object, got {type(data).__name__}")
        toolkit, arch = recorded.text(data, "toolkit"), recorded.text(data, "arch")
        if toolkit != BUNDLED and not re.fullmatch(r"\d+(\.\d+)*", toolkit):
            raise ValueError(f"toolkit: expected a version such as 12.4, got {toolkit!r}")
        Arch.parse(arch)  # a ValueError naming it
        outcome = recorded.one_of(data, "outcome", OUTCOMES)
        cell = Cell(recorded.text(data, "case"), recorded.text(data, "variant"), toolkit, arch,
                    recorded.text(data, "frontend"), recorded.optional_text(data, "library"),
                    recorded.optional_text(data, "library_version"),
                    recorded.text(data, "runner", ""),
                    recorded.optional_text(data, "host_compiler"),
                    recorded.optional_text(data, "python"))
        stages = data.get("stages", [])
        if not isinstance(stages, list):
            raise ValueError(f"stages: expected a list, got {type(stages).__name__}")
        return cls(
            cell=cell,
            outcome=outcome,
            stage=recorded.one_of(data, "stage", STAGE_NAMES),
            reached=recorded.one_of(data, "reached", REACHED, ""),
            message=recorded.text(data, "message", ""),
            reason=recorded.text(data, "reason", ""),
            expected=recorded.text(data, "expected", ""),
            note=recorded.text(data, "note", ""),
            diagnosis=recorded.diagnosis(data),
            stages=tuple(StageResult.from_dict(s) for s in stages),
            seconds=recorded.number(data, "seconds"),
            title=recorded.text(data, "title", ""),
            upstream=tuple(recorded.texts(data, "upstream")),
            versions=recorded.text_table(data, "versions"),
            device=recorded.table(data, "device", optional=True),
            prediction=recorded.table(data, "prediction", optional=True),
            attempts=tuple(recorded.tables(data, "attempts")),
        )


class BisectTime(TypedDict):
    """With --slower, how fast one end of a change ran: its median, noise, its ratio to
    the reference value's, and its bandwidth where the case moves known bytes."""

    median_us: float
    noise: NotRequired[float | None]
    ratio: float
    bandwidth_gbs: NotRequired[float]


class BisectSide(TypedDict):
    """One end of a change bisect found: the value, the cell run there, what happened, the
    line that reruns it."""

    value: str
    cell: str
    happened: str
    outcome: Outcome
    message: str
    repro: str
    time: NotRequired[BisectTime]


class BisectChange(TypedDict):
    """Where what happened changed along the axis: its two neighbouring cells and the
    values between them that could not be run."""

    at: str
    before: BisectSide
    after: BisectSide
    skipped_between: list[str]


class BisectSlower(TypedDict):
    """--slower's reference: the ratio asked for and the first value's median time."""

    ratio: float
    value: str
    median_us: float


class BisectAnswer(TypedDict):
    """`cudamatrix bisect`'s answer as results.json keeps it (RunInfo.bisect)."""

    over: str
    values: list[str]
    changes: list[BisectChange]
    probed: list[str]
    skipped: dict[str, str]
    slower: NotRequired[BisectSlower]


_T = TypeVar("_T")


def _named(where: str, read: Callable[[], _T]) -> _T:
    """`read()`, a refusal of it named from `where` down (`bisect.changes[0].`)."""
    try:
        return read()
    except ValueError as exc:
        raise ValueError(f"{where}{exc}") from None


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object, got {value!r:.60}")
    return value


def _text(data: dict[str, Any], key: str, where: str) -> str:
    return _named(where, lambda: recorded.text(data, key))


def _number(data: dict[str, Any], key: str, where: str) -> float:
    return recorded.number(data, key, None, where=where)


def _texts(data: dict[str, Any], key: str, where: str, least: int = 0) -> list[str]:
    """A required list of strings, of at least `least` (the report names the first)."""
    value = data.get(key)
    if not isinstance(value, list) or len(value) < least \
            or not all(isinstance(v, str) for v in value):
        wanted = "at least one string" if least else "strings"
        raise ValueError(f"{where}{key}: expected a list of {wanted}, got {value!r:.60}")
    return value


def _bisect_time(value: object, where: str) -> BisectTime:
    data = _object(value, where)
    time = BisectTime(median_us=_number(data, "median_us", f"{where}."),
                      ratio=_number(data, "ratio", f"{where}."))
    if data.get("noise") is not None:
        time["noise"] = _number(data, "noise", f"{where}.")
    elif "noise" in data:
        time["noise"] = None
    if "bandwidth_gbs" in data:
        time["bandwidth_gbs"] = _number(data, "bandwidth_gbs", f"{where}.")
    return time


def _bisect_side(value: object, where: str) -> BisectSide:
    data, named = _object(value, where), f"{where}."
    side = BisectSide(value=_text(data, "value", named), cell=_text(data, "cell", named),
                      happened=_text(data, "happened", named),
                      outcome=_named(named, lambda: recorded.one_of(data, "outcome",
                                                                    OUTCOMES)),
                      message=_text(data, "message", named), repro=_text(data, "repro", named))
    if data.get("time") is not None:
        side["time"] = _bisect_time(data["time"], f"{named}time")
    return side


def _bisect_change(value: object, where: str) -> BisectChange:
    data, named = _object(value, where), f"{where}."
    return BisectChange(at=_text(data, "at", named),
                        before=_bisect_side(data.get("before"), f"{named}before"),
                        after=_bisect_side(data.get("after"), f"{named}after"),
                        skipped_between=_texts(data, "skipped_between", named))


def bisect_answer(value: object) -> BisectAnswer | None:
    """A recorded `run.bisect`, every field the reports and `bisect` print read by type:
    one of another type or missing is a ValueError naming it (`bisect.changes`), never a
    KeyError or a format error in the middle of the Markdown."""
    if value is None:
        return None
    data = _object(value, "bisect")
    changes = data.get("changes")
    if not isinstance(changes, list):
        raise ValueError(f"bisect.changes: expected a list of objects, got {changes!r:.60}")
    answer = BisectAnswer(
        over=_text(data, "over", "bisect."), values=_texts(data, "values", "bisect.", 1),
        changes=[_bisect_change(c, f"bisect.changes[{i}]") for i, c in enumerate(changes)],
        probed=_texts(data, "probed", "bisect."),
        skipped=_named("bisect.", lambda: recorded.text_table(data, "skipped")))
    if data.get("slower") is not None:
        slower = _object(data["slower"], "bisect.slower")
        answer["slower"] = BisectSlower(ratio=_number(slower, "ratio", "bisect.slower."),
                                        value=_text(slower, "value", "bisect.slower."),
                                        median_us=_number(slower, "median_us",
                                                          "bisect.slower."))
    return answer


@dataclass(frozen=True)
class RunInfo:
    """Where and with what a run happened: printed in every report's header."""

    started: str
    finished: str
    tier: str
    provider: str
    host: str
    tool_version: str
    device: dict[str, Any] | None = None
    toolkits: dict[str, dict[str, Any]] = field(default_factory=dict)
    libraries: dict[str, dict[str, Any]] = field(default_factory=dict)
    runner_label: str = ""
    command: str = ""
    wall_seconds: float = 0.0
    # How the provider was chosen: named, or what `--provider auto` found (an engine that
    # appears changes the verdicts, so the report says why this provider ran).
    provider_choice: str = ""
    # Environments that could not be prepared (a pin pip cannot satisfy, no Docker engine):
    # the user's to fix, so the run ends with status 2 once every other cell is done.
    environment_errors: dict[str, str] = field(default_factory=dict)
    # The commit the run was made from ($GITHUB_SHA in Actions, else git's HEAD where the
    # run started): what history names as the first run where a cell flipped.
    revision: str = ""
    # `cudamatrix bisect`'s answer, where the run was one: the axis, its values, the changes.
    bisect: BisectAnswer | None = None
    # What a cell's repro command carries besides the cell (run_flags.repro_arguments: its
    # corpus, tier, matrix, cache, GPU or not, ...), shell-quoted, and the project's root it
    # is run from (config/project.project_root), which its paths are named from: the
    # reports make the line (config/repro_line.py), and it reruns the cell as this run ran
    # it. The root is this machine's path; a report names it by its name alone.
    repro_args: str = ""
    repro_folder: str = ""
    # The project's [paths]: each tree its cases named as {NAME}, by its folder here.
    paths: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunInfo:
        """A recorded run, each field of the type the reports' headers read."""
        if not isinstance(data, dict):
            raise ValueError(f"run: expected an object, got {type(data).__name__}")
        tables = {key: recorded.table(data, key) or {} for key in ("toolkits", "libraries")}
        for key, entries in tables.items():
            for name, facts in entries.items():
                if not isinstance(facts, dict):
                    raise ValueError(f"{key}.{name}: expected an object, got {facts!r:.60}")
                recorded.table(facts, "tool_versions")
                recorded.table(facts, "packages")
        return cls(
            started=recorded.text(data, "started"), finished=recorded.text(data, "finished"),
            tier=recorded.text(data, "tier"), provider=recorded.text(data, "provider"),
            host=recorded.text(data, "host"), tool_version=recorded.text(data, "tool_version"),
            device=recorded.table(data, "device", optional=True),
            toolkits=tables["toolkits"], libraries=tables["libraries"],
            runner_label=recorded.text(data, "runner_label", ""),
            command=recorded.text(data, "command", ""),
            wall_seconds=recorded.number(data, "wall_seconds"),
            provider_choice=recorded.text(data, "provider_choice", ""),
            environment_errors=recorded.text_table(data, "environment_errors"),
            revision=recorded.text(data, "revision", ""),
            bisect=bisect_answer(data.get("bisect")),
            repro_args=recorded.shell_words(data, "repro_args"),
            repro_folder=recorded.text(data, "repro_folder", ""),
            paths=recorded.text_table(data, "paths"))


def save_cell(out: Path, result: CellResult) -> None:
    write_atomic(out / CELLS_DIR / f"{result.cell.slug}.json", json.dumps(result.to_dict()))


def load_cell(path: Path) -> CellResult:
    """One saved cell; a damaged file is a UserError that names it."""
    try:
        return CellResult.from_dict(recorded.read_json(path, 64 << 20))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"{path}: damaged cell record ({type(exc).__name__}: {exc}); "
                        "delete it to run that cell again") from None


def load_cells(folder: Path) -> list[CellResult]:
    return [load_cell(p) for p in sorted((folder / CELLS_DIR).glob("*.json"))]


def summary(results: Iterable[CellResult]) -> dict[str, int]:
    counts = Counter(r.outcome for r in results)
    return {outcome: counts.get(outcome, 0) for outcome in OUTCOMES}


def results_document(info: RunInfo, results: Sequence[CellResult]) -> dict[str, Any]:
    return {
        "schema": "cudamatrix-results",
        "schema_version": SCHEMA_VERSION,
        "run": info.to_dict(),
        "summary": summary(results),
        "cells": [r.to_dict() for r in results],
    }


def load_results(path: Path) -> tuple[RunInfo, list[CellResult]]:
    """A results.json; anything else (unreadable, not JSON, damaged) is a UserError naming it."""
    try:
        data = recorded.read_json(path)
    except recorded.UnreadableRecord as exc:
        raise UserError(f"{path}: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != "cudamatrix-results":
        raise UserError(f"{path}: not a cudamatrix results file")
    try:
        return RunInfo.from_dict(data["run"]), [CellResult.from_dict(c) for c in data["cells"]]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"{path}: damaged results file ({type(exc).__name__}: {exc})") from None
