"""The record one stage leaves behind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ...common import recorded
from ...errors import without_credentials

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
# The last stage a cell passed: a stage, or "" where none did.
Reached = Literal["", "compile", "inspect", "load", "run"]
REACHED: tuple[Reached, ...] = get_args(Reached)


# A compile shared by sibling archs (compile_together): the whole compile's seconds, in
# its stage's details; the stage's own `seconds` is each cell's share.
TOGETHER_SECONDS = "together_seconds"


def said_stage_seconds(stage: StageResult) -> str:
    """A stage's time as a person reads it: a compile shared with sibling archs says the
    whole compile's time and how many it built (a share alone, "9.2 s" of a 36 s nvcc,
    read as the compile's own time)."""
    whole = stage.details.get(TOGETHER_SECONDS)
    if len(stage.built_with) > 1 and isinstance(whole, int | float):
        return (f"{float(whole):.1f} s for one compile of {len(stage.built_with)} archs "
                f"({stage.seconds:.1f} s each)")
    return f"{stage.seconds:.1f} s"


# The facts of `StageResult` that the run's side acts on, by the key each is recorded
# under in "details" (the record's JSON is as it was before they were fields).
CONTROL_KEYS = ("accident", "read_outside", "via", "cache", "not_started", "built_alone",
                "built_with")


@dataclass(frozen=True)
class StageResult:
    stage: Stage
    status: Status
    message: str = ""
    log: str = ""
    seconds: float = 0.0
    # What the stage found, for the reports (resources, warnings, timing, the kernel...).
    details: dict[str, Any] = field(default_factory=dict)
    # What the run's side acts on, named, so that no layer reads another's flag by a key:
    # the compiler did not finish on its own (a signal, the memory limit: never cached)...
    accident: str | None = field(default=None, kw_only=True)
    # ...files nvcc read that the compile key did not hold (such a compile is not kept)...
    read_outside: tuple[str, ...] = field(default=(), kw_only=True)
    # ...how the load stage got the module (cubin, ptx-jit, library)...
    via: str | None = field(default=None, kw_only=True)
    # ...where the compile came from ("hit": the compile cache; else the cache's note)...
    cache: str | None = field(default=None, kw_only=True)
    # ...a cell the run's time limit never started...
    not_started: bool = field(default=False, kw_only=True)
    # ...why a cell of a together-compiled group was built alone, and the archs one nvcc
    # built together.
    built_alone: str | None = field(default=None, kw_only=True)
    built_with: tuple[str, ...] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        """Every word a stage records passes the credential filter here, as it is made: a
        stage record is where what a process printed (a build's log, a compiler's message,
        a worker's last words) enters the run's record, and every report, the console and
        --resume read it from there; a record read back is filtered again (one written
        before the filter was)."""
        for name in ("message", "log", "accident", "built_alone"):
            value = getattr(self, name)
            if value and "@" in value:
                object.__setattr__(self, name, without_credentials(value))
        object.__setattr__(self, "details", _masked(self.details))

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record, the named facts inside "details" as they always were.
        Not dataclasses.asdict: its deep copy of every detail was a tenth of a warm nightly
        run (2329 cells), and details are JSON data already."""
        details = dict(self.details)
        for key in CONTROL_KEYS:
            value = getattr(self, key)
            if value:
                details[key] = list(value) if isinstance(value, tuple) else value
        return {"stage": self.stage, "status": self.status, "message": self.message,
                "log": self.log, "seconds": self.seconds, "details": details}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageResult:
        """A recorded stage (results.json, a cell file, a prebuilt folder): its stage and
        status must be ones this tool knows, or the record is refused by name."""
        if not isinstance(data, dict):
            raise ValueError(f"a stage record is an object, got {type(data).__name__}")
        if data.get("stage") not in STAGE_NAMES or data.get("status") not in STATUSES:
            raise ValueError(f"not a stage record: stage {data.get('stage')!r:.40}, "
                             f"status {data.get('status')!r:.40}")
        details = dict(recorded.table(data, "details") or {})
        recorded.check_details(details)
        # A fact recorded as null or false (an audit's "via": null) stays in details as it
        # was written, so the record reads back to the same JSON.
        control = {key: details.pop(key) for key in CONTROL_KEYS if details.get(key)}
        return cls(stage=data["stage"], status=data["status"],
                   message=recorded.text(data, "message", ""), log=recorded.text(data, "log", ""),
                   seconds=recorded.number(data, "seconds"), details=details,
                   accident=_text_or_none(control.get("accident")),
                   read_outside=_texts(control.get("read_outside")),
                   via=_text_or_none(control.get("via")),
                   cache=_text_or_none(control.get("cache")),
                   not_started=control.get("not_started") is True,
                   built_alone=_text_or_none(control.get("built_alone")),
                   built_with=_texts(control.get("built_with")))


def _text_or_none(value: object) -> str | None:
    return str(value) if value not in (None, False, "") else None


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


# How deep a stage's details may nest: a record nests them about six levels down
# (results.json's cells, a cell's stages, a stage), and every reader refuses a record
# deeper than recorded.MAX_DEPTH, so a deeper value is kept as a note.
DETAILS_DEPTH = recorded.MAX_DEPTH - 16
_TOO_DEEP = (f"(nested deeper than the {DETAILS_DEPTH} levels a stage's details may have: "
             "not kept)")


def _masked(value: Any, depth: int = 1) -> Any:
    """`value` (a stage's details, JSON data) with every URL's userinfo masked and nothing
    nested deeper than DETAILS_DEPTH (a CuTe DSL case's report is what its script printed:
    70 levels made the run's record one no reader takes, and report, merge, --resume and
    --baseline all refused it); the same object where nothing changed, so a record without
    either is not copied."""
    if isinstance(value, str):
        return without_credentials(value) if "@" in value else value
    if isinstance(value, dict | list | tuple) and depth > DETAILS_DEPTH:
        return _TOO_DEEP
    if isinstance(value, dict):
        changed = {k: _masked(v, depth + 1) for k, v in value.items()}
        return changed if any(changed[k] is not v for k, v in value.items()) else value
    if isinstance(value, list | tuple):
        items = [_masked(v, depth + 1) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value
