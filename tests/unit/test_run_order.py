"""`--order` (issue 47's determinism check): the run starts its groups of cells in the
plan's order, its reverse, or the longest expected first. The order is one function of the
groups and the timings, held here; that no verdict depends on it is held where real
compilers judge a reversed run (tests/e2e/test_compile_together.py, its apart run)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cudamatrix.config.options import ORDERS
from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.cell_timings import CellTimings
from cudamatrix.orchestrator.compile_strategy import compile_groups


def _plan() -> list[Cell]:
    """Two variants of one case, nvcc and NVRTC, on two archs: nvcc's two archs a group."""
    return [Cell("order", variant, "13.0", arch, frontend)
            for variant, frontend in (("nvcc", "nvcc"), ("nvrtc-ptxas", "nvrtc"))
            for arch in ("sm_80", "sm_90")]


def _ids(groups: Sequence[Sequence[Cell]]) -> list[list[str]]:
    return [[c.id for c in g] for g in groups]


def test_the_reversed_order_starts_the_last_cell_first(tmp_path: Path) -> None:
    timings = CellTimings(tmp_path)
    apart = compile_groups(_plan(), "apart", timings.expected, 1)
    plan = timings.in_order(apart, "plan")
    assert _ids(plan) == [[c.id] for c in _plan()]
    assert _ids(timings.in_order(apart, "reversed")) == _ids(plan)[::-1]
    grouped = compile_groups(_plan(), "grouped", timings.expected, 1)
    assert _ids(timings.in_order(grouped, "reversed")) == _ids(grouped)[::-1]


def test_the_cost_order_starts_the_longest_expected_first(tmp_path: Path) -> None:
    timings = CellTimings(tmp_path)
    cells = _plan()
    timings.seconds = {c.id: seconds for c, seconds in zip(cells, (1.0, 2.0, 9.0, 3.0),
                                                           strict=True)}
    apart = compile_groups(cells, "apart", timings.expected, 1)
    assert [g[0].id for g in timings.in_order(apart, "cost")] == \
        [cells[2].id, cells[3].id, cells[1].id, cells[0].id]
    # A group counts all its cells: nvcc's two archs (1 + 2 s) tie NVRTC's sm_90 (3 s)
    # and go first, as planned; NVRTC's sm_80 (9 s) alone before both.
    grouped = compile_groups(cells, "grouped", timings.expected, 1)
    assert _ids(timings.in_order(grouped, "cost")) == \
        [[cells[2].id], [cells[0].id, cells[1].id], [cells[3].id]]


def test_every_order_starts_every_group_once(tmp_path: Path) -> None:
    timings = CellTimings(tmp_path)
    groups = compile_groups(_plan(), "grouped", timings.expected, 2)
    for order in ORDERS:
        started = timings.in_order(groups, order)
        assert sorted(map(tuple, _ids(started))) == sorted(map(tuple, _ids(groups))), order
