"""results.json as written: the same document back, a line per cell."""

from __future__ import annotations

import json
from pathlib import Path

from cudamatrix.reports import results_json

REPORTS = Path(__file__).resolve().parents[2] / "reports"


def test_every_kept_run_reads_back_the_same_with_a_line_per_cell() -> None:
    kept = sorted(REPORTS.rglob("results.json"))
    assert kept
    for path in kept:
        document = json.loads(path.read_text())
        text = results_json(document)
        assert json.loads(text) == document, path
        lines = text.splitlines()
        cell_lines = [ln for ln in lines if ln.startswith('  {"id": ')]
        assert len(cell_lines) == len(document["cells"]), path


def test_a_run_without_cells() -> None:
    document = {"run": {"tier": "pr"}, "cells": [], "summary": {}}
    assert json.loads(results_json(document)) == document
