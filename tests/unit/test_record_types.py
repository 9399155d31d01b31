"""A cell's outcome, stage and reached stage are Literal types on the record, read and
checked once (record/results.py), so mypy checks every comparison the reports make with
them (issue 59, point 4: they were `str`, 25 comparisons unchecked)."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from cudamatrix.config.declarations import EXPECT
from cudamatrix.record.outcomes import OUTCOMES
from cudamatrix.record.results import CellResult
from cudamatrix.stages.cell.result import REACHED, STAGE_NAMES

CELL: dict[str, Any] = {"case": "c", "variant": "v", "toolkit": "13.0", "arch": "sm_80",
                        "frontend": "nvrtc", "outcome": "pass", "stage": "run",
                        "reached": "run", "seconds": 1.0, "stages": []}


def test_the_record_types_its_outcome_and_stages() -> None:
    hints = typing.get_type_hints(CellResult)
    assert typing.get_args(hints["outcome"]) == OUTCOMES
    assert typing.get_args(hints["stage"]) == STAGE_NAMES
    assert typing.get_args(hints["reached"]) == REACHED
    # One list of stage names: the one case.toml's `stage` takes is the record's.
    assert EXPECT.key("stage").allowed == STAGE_NAMES


@pytest.mark.parametrize(("key", "value"), [("outcome", "passed"), ("stage", "lod"),
                                            ("reached", "linking")])
def test_a_record_with_another_word_is_refused_naming_the_field(key: str, value: str) -> None:
    with pytest.raises(ValueError, match=rf"{key}: expected one of .*got '{value}'"):
        CellResult.from_dict({**CELL, key: value})
    read = CellResult.from_dict(CELL)
    assert (read.outcome, read.stage, read.reached) == ("pass", "run", "run")
