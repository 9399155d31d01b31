"""What a cell's worker left behind: its stages, or why it left none."""

from __future__ import annotations

from dataclasses import replace

from ...common.recorded import read_cache
from ...stages.cell.files import BUILD_SOURCE, RESULT_FILE
from ...stages.cell.job import Job
from ...stages.cell.result import StageResult
from ...stages.compile.logs import error_lines
from ...stages.process.hang import RAISE_LIMIT, innermost_frame, stack_of, stage_entered
from ...stages.process.limits import left_output


def timed_out(job: Job, output: str = "") -> StageResult:
    """The stopped cell's result: the stage it was in and where its Python stack was."""
    stack = stack_of(job.work)
    where = innermost_frame(stack)
    message = f"cell ran past its {job.timeout:.0f} s limit and was killed ({RAISE_LIMIT})"
    if where:
        message += f"; it was in {where}"
    log = stack
    if output:  # what it said before it was stopped is a clue too
        log = f"{log}\n--- process output ---\n{output[-20_000:]}".strip()
    # What the tool it was running had printed, from the files it streamed to.
    printed = left_output((job.work, job.work / BUILD_SOURCE))
    if printed:
        log = f"{log}\n--- what its tools printed ---\n{printed}".strip()
    return StageResult(stage_entered(job.work), "timeout", message, log,
                       details={"limit_s": round(job.timeout, 1),
                                **({"stopped_in": where} if where else {})})


def collect_stages(job: Job, code: int, how: str, output: str) -> list[StageResult]:
    """The stages a finished worker left in its folder; for one that died, the stages it
    had finished and the crash at the stage it was in."""
    result_file = job.work / RESULT_FILE
    if code != 0 or not result_file.exists():
        crashed = _crashed(job, how, output)
        return [*(s for s in _finished(job) if s.stage != crashed.stage), crashed]
    saved = _saved(job)
    if saved is None:  # the worker said it finished, and left no stages that read back
        return [StageResult(stage_entered(job.work), "error",
                            f"cell worker left a damaged {RESULT_FILE}", output[-20_000:])]
    return with_process_output(saved, output)


def _crashed(job: Job, how: str, output: str) -> StageResult:
    """The crash, at the stage the worker had entered (a kernel that kills its process
    crashes the load or run stage, not the compile)."""
    return StageResult(stage_entered(job.work), "crashed", f"cell worker {how}",
                       output[-20_000:])


def _finished(job: Job) -> list[StageResult]:
    """The stages a worker that died had finished and saved (runtime/pipeline.save_stages)."""
    return _saved(job) or []


def _saved(job: Job) -> list[StageResult] | None:
    """The stages the worker saved in its folder, or None where none read back (a worker
    killed as it wrote them, a full disk)."""
    saved = read_cache(job.work / RESULT_FILE)
    if not isinstance(saved, list):
        return None
    try:
        return [StageResult.from_dict(s) for s in saved]
    except (ValueError, KeyError, TypeError):
        return None


def with_process_output(stages: list[StageResult], output: str) -> list[StageResult]:
    """Device printf and library chatter belong to the last stage's story: its log, and its
    message where it failed and said nothing of its own."""
    if not output or not stages:
        return stages
    last = stages[-1]
    said = error_lines(output)
    message = last.message
    if last.status != "ok" and said and said[0] not in message:
        message = f"{message} (process output: {said[0][:200]})"
    stages = list(stages)
    stages[-1] = replace(last, message=message,
                         log=f"{last.log}\n--- process output ---\n{output[-20_000:]}".strip())
    return stages
