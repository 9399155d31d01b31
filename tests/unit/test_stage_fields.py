"""The facts the run's side acts on are named fields of a stage's record (issue 50, point
2), not keys one layer reads out of another's details; the record's JSON is as it was."""

from __future__ import annotations

import json

from cudamatrix.stages.cell.result import CONTROL_KEYS, StageResult


def _full() -> StageResult:
    return StageResult("compile", "error", "killed", "log", 1.5, {"warnings": ["w"]},
                       accident="memory limit", read_outside=("/x/h.h",), via="ptx-jit",
                       cache="hit", not_started=True, built_alone="its log could not be split",
                       built_with=("sm_80", "sm_90"))


def test_the_named_facts_are_recorded_inside_details_as_before() -> None:
    record = _full().to_dict()
    assert set(record) == {"stage", "status", "message", "log", "seconds", "details"}
    assert record["details"] == {
        "warnings": ["w"], "accident": "memory limit", "read_outside": ["/x/h.h"],
        "via": "ptx-jit", "cache": "hit", "not_started": True,
        "built_alone": "its log could not be split", "built_with": ["sm_80", "sm_90"]}


def test_a_record_read_back_has_its_facts_as_fields() -> None:
    again = StageResult.from_dict(json.loads(json.dumps(_full().to_dict())))
    assert again == _full()
    assert not set(CONTROL_KEYS) & set(again.details)


def test_a_plain_stage_records_no_flag() -> None:
    assert StageResult("load", "ok").to_dict()["details"] == {}


def test_a_fact_recorded_as_null_reads_back_as_it_was_written() -> None:
    """An audit's load stage records "via": null where no image loads."""
    record = {"stage": "load", "status": "failed", "message": "", "log": "", "seconds": 0.0,
              "details": {"via": None, "image": None}}
    again = StageResult.from_dict(json.loads(json.dumps(record)))
    assert again.via is None and again.to_dict() == record
