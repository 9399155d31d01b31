"""Shards partition a run exactly; --resume keeps finished cells and redoes only the rest."""

from __future__ import annotations

from pathlib import Path

SELECTION = ("run", "--case", "marlin-sm75", "--toolkit", "12.4", "--toolkit", "13.0")


def _verdicts(run) -> dict[str, str]:
    return {cell_id: cell["outcome"] for cell_id, cell in run.cells().items()}


def test_shards_partition_the_run(run_cli, tmp_path: Path) -> None:
    whole = run_cli(*SELECTION, out=tmp_path / "whole")
    parts = [run_cli(*SELECTION, "--shard", f"{i}/3", out=tmp_path / f"part{i}")
             for i in (1, 2, 3)]
    merged: dict[str, str] = {}
    for part in parts:
        assert part.code == 0, part.output
        overlap = set(merged) & set(_verdicts(part))
        assert not overlap
        merged.update(_verdicts(part))
    assert merged == _verdicts(whole)
    sizes = sorted(len(_verdicts(p)) for p in parts)
    assert sizes[-1] - sizes[0] <= 1


def test_resume_redoes_only_missing_cells(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run_cli(*SELECTION, out=out)
    assert first.code == 0, first.output
    saved = sorted((out / "cells").glob("*.json"))
    saved[0].unlink()
    again = run_cli(*SELECTION, "--resume", out=out)
    assert f"resuming: {len(saved) - 1} of {len(saved)} cells already done" in again.output
    assert _verdicts(again) == _verdicts(first)
