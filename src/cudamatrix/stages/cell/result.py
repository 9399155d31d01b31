"""The record one stage leaves behind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ...common import recorded

# ok: the stage did its job. failed: the code under test was refused or wrong.
# unsupported: the toolkit does not know the target arch (the cell is a skip).
# unavailable: the environment lacks what the stage needs (no nvcc in a wheel
# toolkit, no driver for CuPy): the cell is a skip, never a silent pass.
# skipped: a later stage could not run here (no GPU). error: the tool or its
# environment broke. timeout: past its time limit. crashed: the worker died.
Status = Literal["ok", "failed", "unsupported", "unavailable", "skipped", "error", "timeout",
                 "crashed"]
STATUSES: tuple[Status, ...] = get_args(Status)
Stage = Literal["compile", "inspect", "load", "run"]
STAGE_NAMES: tuple[Stage, ...] = get_args(Stage)


@dataclass(frozen=True)
class StageResult:
    stage: Stage
    status: Status
    message: str = ""
    log: str = ""
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record. Not dataclasses.asdict: its deep copy of every detail
        was a tenth of a warm nightly run (2329 cells), and details are JSON data already."""
        return {"stage": self.stage, "status": self.status, "message": self.message,
                "log": self.log, "seconds": self.seconds, "details": dict(self.details)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageResult:
        """A recorded stage (results.json, a cell file, a prebuilt folder): its stage and
        status must be ones this tool knows, or the record is refused by name."""
        if not isinstance(data, dict):
            raise ValueError(f"a stage record is an object, got {type(data).__name__}")
        if data.get("stage") not in STAGE_NAMES or data.get("status") not in STATUSES:
            raise ValueError(f"not a stage record: stage {data.get('stage')!r:.40}, "
                             f"status {data.get('status')!r:.40}")
        details = recorded.table(data, "details") or {}
        recorded.check_details(details)
        return cls(stage=data["stage"], status=data["status"],
                   message=recorded.text(data, "message", ""), log=recorded.text(data, "log", ""),
                   seconds=recorded.number(data, "seconds"), details=details)
