"""Issue 69: the Markdown report's resources table cut kernel names at 80 characters, so
two instantiations of one CUTLASS template (whose names share their first hundreds of
characters) read as one kernel with two sets of figures. Names are cut so that rows stay
distinct: the head and the text from where they differ, or the whole name."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from cudamatrix.record.results import CellResult
from cudamatrix.reports.labels import distinct_labels
from cudamatrix.reports.markdown import resources_lines

REPO = Path(__file__).resolve().parents[2]
CELL = "cutlass-sm90/arch-guarded/12.4/sm_90a/cutlass-4.2.0"
TILE, WIDER = "cute::C<128>, cute::C<64> >", "cute::C<256>, cute::C<64> >"


def _published_cell() -> dict[str, Any]:
    """The published H100 run's CUTLASS Hopper GEMM cell, as it was recorded."""
    data = json.loads((REPO / "reports" / "results.json").read_text())
    [cell] = [c for c in data["cells"] if c["id"] == CELL]
    return dict(cell)


def _with_a_wider_tile(cell: dict[str, Any]) -> dict[str, Any]:
    """The cell with a second instantiation of its GEMM beside the first: the same name but
    its tile's N (ptxas reports each instantiation on its own line), other figures."""
    [compile_stage] = [s for s in cell["stages"] if s["stage"] == "compile"]
    [gemm] = compile_stage["details"]["resources"]
    wider = copy.deepcopy(gemm)
    assert wider["name"].count(TILE) == 1
    wider["name"] = wider["name"].replace(TILE, WIDER)
    wider["kernel"] = wider["kernel"].replace("NSA_ILi128EEESF_", "NSA_ILi128EEENSA_ILi256EEE")
    wider["registers"], wider["spill_store_bytes"] = 232, 48
    stage = {**compile_stage, "details": {**compile_stage["details"],
                                          "resources": [gemm, wider]}}
    return {**cell, "stages": [stage if s is compile_stage else s for s in cell["stages"]]}


def _kernel_column(lines: list[str]) -> list[str]:
    rows = [line for line in "\n".join(lines).splitlines()
            if line.startswith("| `arch-guarded`")]
    return [row.split(" | ")[2] for row in rows]


def test_two_instantiations_of_a_template_keep_distinct_rows() -> None:
    cell = CellResult.from_dict(_with_a_wider_tile(_published_cell()))
    shown = _kernel_column(resources_lines([cell]))
    assert len(shown) == 2
    assert shown[0] != shown[1]
    assert all(len(label) < 200 for label in shown)  # still a table, not the 1645 characters
    assert any("256" in label for label in shown)  # the part that tells them apart


def test_a_name_alone_or_short_is_cut_as_before_or_whole() -> None:
    [gemm] = _published_cell()["resources"]
    name = gemm["name"]
    labels = distinct_labels([name, "saxpy(float, float*, float*)"], 80)
    assert labels[name] == name[:79] + "…"
    assert labels["saxpy(float, float*, float*)"] == "saxpy(float, float*, float*)"


def test_names_alike_wherever_cut_are_shown_whole() -> None:
    """Two names that differ only in a window that is itself alike after the head: the
    whole names, however long (a row that reads as another is worse than a long one)."""
    base = "k<" + "a" * 100
    first, second = base + "x" + "b" * 100 + ">", base + "y" + "b" * 100 + ">"
    labels = distinct_labels([first, second], 40)
    assert labels[first] != labels[second]
