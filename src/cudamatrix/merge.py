"""One report from many shards: what the CI's merge job (and `cudamatrix merge`) does.

Shards of one run partition its cells, so merging is a union that must find each
cell exactly once. The same cell from runners with different labels (one GPU
runner per driver, say) is kept once per runner: each becomes a cell of its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .errors import UserError
from .results import CellResult, RunInfo, load_results


def _load(folder: Path) -> tuple[RunInfo, list[CellResult]]:
    path = folder / "results.json" if folder.is_dir() else folder
    if not path.is_file():
        raise UserError(f"{folder}: no results.json (is it a shard's --out folder?)")
    return load_results(path)


def merge_results(shards: Sequence[Path]) -> tuple[RunInfo, list[CellResult]]:
    if not shards:
        raise UserError("merge: name at least one shard folder or results.json")
    loaded = [(path, *_load(path)) for path in shards]
    tiers = {info.tier for _, info, _ in loaded}
    if len(tiers) > 1:
        raise UserError(f"merge: the shards come from different tiers: {sorted(tiers)}")
    labels = {info.runner_label for _, info, _ in loaded}
    per_runner = len(labels) > 1
    seen: dict[str, Path] = {}
    merged: list[CellResult] = []
    for path, info, results in loaded:
        for result in results:
            if per_runner:
                result = replace(result, cell=replace(result.cell, runner=info.runner_label))
            if result.cell.id in seen:
                raise UserError(f"merge: cell {result.cell.id} is in both {seen[result.cell.id]} "
                                f"and {path}: shards of one run must not overlap")
            seen[result.cell.id] = path
            merged.append(result)
    infos = [info for _, info, _ in loaded]
    first = infos[0]
    toolkits: dict[str, dict[str, object]] = {}
    libraries: dict[str, dict[str, object]] = {}
    errors: dict[str, str] = {}
    for info in infos:
        toolkits.update(info.toolkits)
        libraries.update(info.libraries)
        errors.update(info.environment_errors)
    devices = {json.dumps(i.device, sort_keys=True): i.device for i in infos if i.device}
    info = replace(
        first,
        started=min(i.started for i in infos), finished=max(i.finished for i in infos),
        host=first.host if len({i.host for i in infos}) == 1
        else f"{len(infos)} shards on {len({i.host for i in infos})} hosts",
        # One GPU for all shards is named as such; several are listed per runner label.
        device=next(iter(devices.values())) if len(devices) == 1 else first.device,
        toolkits=toolkits, libraries=libraries, environment_errors=errors,
        runner_label=", ".join(sorted(label for label in labels if label)),
        command=f"cudamatrix merge ({len(infos)} shards)",
        wall_seconds=max(i.wall_seconds for i in infos))
    return info, merged


def report_differences(one: Path, other: Path) -> list[str]:
    """Where two runs' reports disagree, cell by cell (timings and dates aside)."""
    def cells(folder: Path) -> dict[str, tuple[str, str, str, str | None]]:
        _, results = _load(folder)
        # Measured times inside messages (the DSL's cold/warm compile) differ run to run.
        return {r.cell.id: (r.outcome, r.stage, re.sub(r"\d+\.\d+", "#", r.message),
                            (r.diagnosis or {}).get("rule")) for r in results}

    left, right = cells(one), cells(other)
    found = [f"only in {one}: {i}" for i in sorted(set(left) - set(right))]
    found += [f"only in {other}: {i}" for i in sorted(set(right) - set(left))]
    found += [f"{i}: {left[i]} != {right[i]}" for i in sorted(set(left) & set(right))
              if left[i] != right[i]]
    return found
