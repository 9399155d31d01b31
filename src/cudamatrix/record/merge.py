"""One report from many shards: what the CI's merge job (and `cudamatrix merge`) does.

Shards of one run partition its cells, so merging is a union that must find each
cell exactly once. The same cell from runners with different labels (one GPU
runner per driver, say) is kept once per runner: each becomes a cell of its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .. import __version__
from ..config.plan import Cell
from ..errors import UserError
from ..stages.cell.result import StageResult
from .results import CELLS_DIR, CellResult, RunInfo, load_cell, load_results
from .verdict import lost_verdict


@dataclass(frozen=True)
class ExpectedShard:
    """One job of the workflow's plan: the cells it was to run and where its results land
    (the artifact name is the folder download-artifact makes)."""

    name: str
    artifact: str
    label: str
    cells: tuple[Cell, ...]


@dataclass
class LoadedShard:
    path: Path
    info: RunInfo | None
    results: list[CellResult]
    # Why the shard's results.json could not be used; its cells/ then stand in for it.
    problem: str = ""


def _load_shard(folder: Path) -> LoadedShard:
    """A shard's results; a shard that died before writing results.json (or wrote a broken
    one) gives what its cells/ folder saved, and says so: one bad shard costs its own
    missing cells, never the night's report."""
    path = folder / "results.json" if folder.is_dir() else folder
    try:
        info, results = load_results(path)
        return LoadedShard(folder, info, results)
    except UserError as exc:
        problem = str(exc)
    saved: list[CellResult] = []
    cells_dir = folder / CELLS_DIR
    if cells_dir.is_dir():
        for record in sorted(cells_dir.glob("*.json")):
            try:
                saved.append(load_cell(record))
            except UserError as exc:
                problem += f"; {exc}"
    if not saved and not folder.is_dir():
        raise UserError(problem)
    return LoadedShard(folder, None, saved, f"{problem} ({len(saved)} cells recovered from "
                                            f"{CELLS_DIR}/)")


def lost_cell(cell: Cell, shard: str, why: str) -> CellResult:
    """A planned cell no shard reported: an error of the run, named, never a silent gap."""
    message = f"shard lost: {shard} left no result for this cell ({why})"
    verdict = lost_verdict(message)
    return CellResult(cell=cell, outcome=verdict.outcome, stage=verdict.stage,
                      reached=verdict.reached, message=verdict.message, reason=verdict.reason,
                      expected="", diagnosis=None, seconds=0.0,
                      stages=(StageResult("compile", "error", message),))


# The workflow names each attempt's artifact apart (a re-run may not upload a name the run
# already has): ARTIFACT-attempt-N.
_ATTEMPT = re.compile(r"^(?P<shard>.+)-attempt-(?P<attempt>[0-9]{1,6})$")


def shard_name(path: Path) -> tuple[str, int]:
    """A shard folder's plan artifact name and its attempt (1 where none is named)."""
    found = _ATTEMPT.match(path.name)
    return (found["shard"], int(found["attempt"])) if found else (path.name, 1)


def newest_attempts(shards: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """Of the folders a re-run left (a shard's first attempt, then its re-run), the newest
    attempt of each shard, in the order given; and the older ones set aside."""
    newest: dict[str, Path] = {}
    for path in shards:
        name, attempt = shard_name(path)
        if name not in newest or shard_name(newest[name])[1] < attempt:
            newest[name] = path
    kept = [p for p in shards if newest[shard_name(p)[0]] == p]
    return kept, [p for p in shards if p not in kept]


def merge_results(shards: Sequence[Path], expected: Sequence[ExpectedShard] = ()
                  ) -> tuple[RunInfo, list[CellResult]]:
    """Every shard's cells in one run, the newest attempt of each; with the plan's
    `expected` jobs, every planned cell that no shard reported is an error naming its job."""
    if not shards and not expected:
        raise UserError("merge: name at least one shard folder or results.json")
    shards, _ = newest_attempts(shards)
    loaded = [_load_shard(path) for path in shards]
    infos = [s.info for s in loaded if s.info is not None]
    tiers = {info.tier for info in infos}
    if len(tiers) > 1:
        raise UserError(f"merge: the shards come from different tiers: {sorted(tiers)}")
    labels = {info.runner_label for info in infos} | {e.label for e in expected}
    per_runner = len(labels) > 1
    seen: dict[str, Path] = {}
    merged: list[CellResult] = []
    for shard in loaded:
        label = shard.info.runner_label if shard.info else next(
            (e.label for e in expected if e.artifact == shard_name(shard.path)[0]), "")
        for result in shard.results:
            if per_runner:
                result = replace(result, cell=replace(result.cell, runner=label))
            if result.cell.id in seen:
                raise UserError(f"merge: cell {result.cell.id} is in both {seen[result.cell.id]} "
                                f"and {shard.path}: shards of one run must not overlap")
            seen[result.cell.id] = shard.path
            merged.append(result)
    errors: dict[str, str] = {f"shard {s.path}": s.problem for s in loaded if s.problem}
    found = {shard_name(s.path)[0]: s for s in loaded}
    for job in expected:
        arrived = found.get(job.artifact)
        why = arrived.problem if arrived and arrived.problem else "its results never arrived"
        lost = 0
        for cell in job.cells:
            cell = replace(cell, runner=job.label) if per_runner else cell
            if cell.id not in seen:
                merged.append(lost_cell(cell, job.name, why))
                seen[cell.id] = Path(job.artifact)
                lost += 1
        if lost:
            errors[f"shard {job.name}"] = f"{lost} planned cells lost: {why}"
    if not merged:
        raise UserError(_no_cell(loaded))
    info = _merged_info(infos, labels, errors, len(loaded))
    return info, merged


def _no_cell(loaded: Sequence[LoadedShard]) -> str:
    """Why a merge that found no cell at all (every shard broken or empty, no --plan to
    name the lost ones) is refused: a report of 0 cells would be a green merge of nothing."""
    broken = [s for s in loaded if s.problem]
    why = (f"{broken[0].path}: {broken[0].problem}" if broken
           else f"{loaded[0].path} holds none" if loaded else "no shard")
    more = f" and {len(loaded) - 1} more shards" if len(loaded) > 1 else ""
    return f"merge: no cell in any shard ({why[:300]}{more}): a merge with no cell is no report"


def _merged_info(infos: Sequence[RunInfo], labels: set[str], errors: dict[str, str],
                 shards: int) -> RunInfo:
    if not infos:  # every shard was lost: the report still says so
        now = ""
        return RunInfo(started=now, finished=now, tier="?", provider="unknown",
                       host="no shard reported", tool_version=__version__,
                       environment_errors=errors, command=f"cudamatrix merge ({shards} shards)")
    first = infos[0]
    toolkits: dict[str, dict[str, object]] = {}
    libraries: dict[str, dict[str, object]] = {}
    for info in infos:
        toolkits.update(info.toolkits)
        libraries.update(info.libraries)
        errors = {**info.environment_errors, **errors}
    devices = {json.dumps(i.device, sort_keys=True): i.device for i in infos if i.device}
    return replace(
        first,
        started=min(i.started for i in infos), finished=max(i.finished for i in infos),
        host=first.host if len({i.host for i in infos}) == 1
        else f"{len(infos)} shards on {len({i.host for i in infos})} hosts",
        # One GPU for all shards is named as such; several are listed per runner label.
        device=next(iter(devices.values())) if len(devices) == 1 else first.device,
        toolkits=toolkits, libraries=libraries, environment_errors=errors,
        runner_label=", ".join(sorted(label for label in labels if label)),
        command=f"cudamatrix merge ({shards} shards)",
        wall_seconds=max(i.wall_seconds for i in infos))


def report_differences(one: Path, other: Path) -> list[str]:
    """Where two runs' reports disagree, cell by cell (timings and dates aside)."""
    def cells(folder: Path) -> dict[str, tuple[str, str, str, str | None]]:
        results = _load_shard(folder).results
        # Measured times inside messages (the DSL's cold/warm compile) differ run to run.
        return {r.cell.id: (r.outcome, r.stage, re.sub(r"\d+\.\d+", "#", r.message),
                            (r.diagnosis or {}).get("rule")) for r in results}

    left, right = cells(one), cells(other)
    found = [f"only in {one}: {i}" for i in sorted(set(left) - set(right))]
    found += [f"only in {other}: {i}" for i in sorted(set(right) - set(left))]
    found += [f"{i}: {left[i]} != {right[i]}" for i in sorted(set(left) & set(right))
              if left[i] != right[i]]
    return found
