"""One matrix run: plan the cells, prepare environments, run every cell, keep every result.

Cells run in worker processes (one each, here in its own process group or in its
toolkit's container, under a time limit; see executors/) from a thread pool sized
to the cores, after the compile cache had its say. Each result is saved the moment
it exists, so an interrupted run loses nothing it finished.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, NamedTuple

from .. import __version__
from ..common.folders import RUN_LOCK, tag_cache, writable_folder
from ..common.interruption import end_run, interrupt, start_run, stop_preparations
from ..common.locks import LockHeld, exclusive_lock, set_run_deadline
from ..common.removal import FolderRemoval, claimed_out
from ..common.revision import source_revision
from ..common.up_to_date import InputLedger, forget
from ..config.corpus import Case
from ..config.options import CACHE_ENV, RunOptions
from ..config.plan import Cell
from ..config.planning import Plan, make_plan
from ..config.project import project_root
from ..config.run_flags import repro_arguments
from ..errors import RunOutOfTime, UserError
from ..providers import Environment, LibraryEnvironment
from ..providers.choice import choose_provider
from ..providers.toolkits import CellSite
from ..record.results import (
    ARTIFACTS_DIR,
    CELLS_DIR,
    CellResult,
    RunInfo,
    load_cells,
    load_results,
    save_cell,
)
from ..stages.cell.result import StageResult
from ..stages.frontends import frontend
from .cell_jobs import runs_to_its_limit
from .cell_runner import CellRunner, Prepared
from .cell_timings import CellTimings
from .compile_strategy import CompileCores, compile_groups, strategy_of
from .environments import Environments
from .executors import Executor
from .gpu import DeviceInfo, run_device
from .prefetch import EnvironmentPrefetch, GroupQueue
from .progress import Progress


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


class Ran(NamedTuple):
    """A run's record, every cell's result as each cell was judged, and the cases they were
    made from (the run-level verdicts, `record.verdict.judge_run`, need them)."""

    info: RunInfo
    results: list[CellResult]
    cases: Mapping[str, Case]


def run_plan(options: RunOptions, progress: Progress,
            on_result: Callable[[CellResult], None] | None = None,
            device: DeviceInfo | None = None, *, ledger: InputLedger) -> Ran:
    """Run the planned cells; returns the run record and every cell's result. `device`:
    the GPU as the caller already probed it (run_device), else probed here. `ledger`: the
    run's own, which every environment and cell watches what it read in, and which says
    why a re-run could not answer from the record (the caller records the run from it)."""
    plan = make_plan(options)
    started_at, started = _now(), time.monotonic()
    set_run_deadline(options.run_timeout)  # a lock wait, here or in a cell, ends with the run
    out = options.out
    writable_folder(out, "the output folder (--out)")
    claimed_out(out)  # before its lock: a refused folder is left as it was
    writable_folder(options.cache, "the cache folder",
                    f"give another with --cache or ${CACHE_ENV}")
    tag_cache(options.cache)
    lock = lock_output(out)
    # At the run's limit its preparations and look-ups stop (common/interruption.py).
    start_run(options.run_timeout, started)
    try:
        info, results = _execute(options, plan, progress, on_result, started_at, started,
                                 device or run_device(options.gpu), ledger)
        return Ran(info, results, plan.cases)
    finally:
        lock.close()
        end_run()


def lock_output(out: Path) -> IO[str]:
    """Hold `out` for this run alone: two runs writing one folder's cells and artifacts
    corrupt each other's compiles (ptxas finding its input gone) and results."""
    try:
        return exclusive_lock(out / RUN_LOCK)
    except LockHeld as held:
        raise UserError(f"{out}: another run is writing this folder ({held}); wait for it "
                        "or give another --out") from None


def _execute(options: RunOptions, plan: Plan, progress: Progress,
             on_result: Callable[[CellResult], None] | None, started_at: str,
             started: float, device: DeviceInfo, ledger: InputLedger
             ) -> tuple[RunInfo, list[CellResult]]:
    out = options.out
    # The provider first, kept in `out`: where it changed since the last run there, the
    # run's first line says so (choice.py).
    local_frontends = sorted({c.frontend for c in plan.cells
                              if frontend(c.frontend).builds_project})
    provider, provider_choice = choose_provider(options.provider, options.docker_flavour,
                                                options.cuda_compat, progress, out,
                                                local_frontends)
    for reason, count in sorted(plan.pruned.items()):
        progress.note(f"pruned {count} cell(s) that cannot exist: {reason}")
    for idle in plan.idle_variants:
        progress.note(f"variant {idle} has no cell in tier {plan.tier.name}: it never runs")
    done: dict[str, CellResult] = {}
    forget(out)  # the last run's record stops holding as this one starts writing
    removal = FolderRemoval(out)
    if options.resume:
        done = {r.cell.id: r for r in load_cells(out) if r.cell in set(plan.cells)}
        if done:
            progress.note(f"resuming: {len(done)} of {len(plan.cells)} cells already done")
    else:
        removal.discard(out / CELLS_DIR)
        # The last run's artifacts (each cell's folder is made anew), unless they are what
        # this run takes its builds from (--prebuilt naming this --out).
        if not (options.prebuilt and options.prebuilt.resolve() == out.resolve()):
            removal.discard(out / ARTIFACTS_DIR)
    progress.note(f"GPU: {device.name} {device.arch}, driver {device.driver}" if device.present
                  else f"GPU: none ({device.reason})")
    envs = Environments(plan.matrix, provider, options.cache, progress, options.containers,
                        options.docker_flavour, container_timeout=options.container_timeout,
                        cuda_compat=options.cuda_compat, ledger=ledger)
    todo = [c for c in plan.cells if c.id not in done]
    # A cell its case expects to hang costs its limit: known before any run, it starts first.
    timings = CellTimings(options.cache, limits={
        c: limit for c in todo
        if (limit := runs_to_its_limit(plan.variant(c), c, options, device.present))})
    # The project's [paths] trees are read like case folders (read-only in a container).
    # The driver's PTX JIT kept per driver (and, by its server, per GPU kind): a warm re-run
    # JIT-compiled every sm_80 module again (29.6 s of 35 on an H200); cold without the
    # compile cache.
    jit_cache = options.cache / "ptx-jit" / re.sub(r"[^A-Za-z0-9._-]+", "_",
                                                   f"driver-{device.driver}") \
        if device.present and options.compile_cache else None
    executor = envs.executor(CellSite(options.out, (*options.corpus, *options.paths.values()),
                                      device.present,
                                      options.gpu_server, progress.note, jit_cache,
                                      options.jobs))
    # The cores the compiles hold, which a group's nvcc is given --threads from
    # (compile_strategy.py); the pool is as wide as --jobs.
    strategy = strategy_of(options)
    cores = CompileCores(options.jobs, strategy)
    runner = CellRunner(plan, options, envs, device, executor, started, ledger=ledger,
                        cores=cores)
    results = list(done.values())
    progress.start(len(plan.cells) + len(plan.ruled_out))
    for result in results:
        progress.cell_done(result)
    for cell, why in plan.ruled_out:  # every cell accounted for: a skip saying why
        if cell.id in done:
            continue
        said = f"ruled out for toolkit {cell.toolkit} and {cell.arch}: {why}"
        result = runner.judged(Prepared(cell, plan.variant(cell)), [StageResult(
            "compile", "unsupported", said, details={"ruled_out": True})], 0.0)
        save_cell(out, result)
        results.append(result)
        progress.cell_done(result)
        if on_result:
            on_result(result)

    # Longest first, by what each cell took last time, so the run does not end on one; a
    # group that would end it alone split into its cells where the cores let it
    # (compile_strategy.split_critical).
    groups = compile_groups(todo, strategy, timings.expected, options.jobs)
    ordered = timings.in_order(groups, options.order)
    progress.expect({c.id: timings.expected(c) for c in todo}, options.jobs,
                    guessed={c.id: timings.alike(c) for c in todo if timings.guessed(c)})
    # Each environment prepared ahead of its cells, in the schedule's order, and each group
    # taken up as its environments are ready (prefetch.py).
    changed = threading.Condition()
    prefetch = EnvironmentPrefetch(ordered, runner.jobs.environment_needs,
                                   runner.jobs.prepare_environment, changed)
    queue = GroupQueue(ordered, prefetch.ready, changed,
                       cost=lambda g: sum(timings.expected(c) for c in g), workers=options.jobs)
    cores.waiting = queue.waiting
    try:
        unwritten = _run_pool(queue, len(ordered), runner, executor, options,
                              progress, on_result, results, cores)
    finally:
        prefetch.close()
    timings.record(r for r in results if r.cell.id not in done)
    removal.wait()
    if unwritten:
        raise UserError(f"the run stopped at cell {unwritten[0]}; {len(results)} finished cells "
                        f"are kept in {out / CELLS_DIR}: make room and go on with --resume")
    toolkits, libraries = _environment_facts(options, envs)
    root = project_root(Path.cwd())
    info = RunInfo(
        started=started_at, finished=_now(), tier=plan.tier.name, provider=provider,
        provider_choice=provider_choice,
        host=f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()})",
        tool_version=__version__, device=device.to_dict(), toolkits=toolkits,
        libraries=libraries, runner_label=options.runner_label,
        environment_errors=_environment_errors(envs, options),
        command=" ".join(Path(sys.argv[0]).name.split() + sys.argv[1:]),
        wall_seconds=round(time.monotonic() - started, 1), revision=source_revision(),
        repro_args=shlex.join(repro_arguments(options, root)),
        repro_folder=str(root),
        paths={name: str(folder) for name, folder in options.paths.items()})
    return info, results


class Taken(NamedTuple):
    """A group a worker took up, and its cells' results (or what stopped its writing)."""

    group: Sequence[Cell]
    results: list[CellResult]
    unwritable: OSError | None = None


def _started(progress: Progress, runner: CellRunner, queue: GroupQueue,
             cores: CompileCores) -> Taken:
    """The next group's cells run, said to the progress as a worker takes them up (so a
    log names the cells running, not only those done), holding a core while they run."""
    group = queue.take()
    progress.cells_started(c.id for c in group)
    with cores.running():
        try:
            return Taken(group, runner.run_cells(group))
        except OSError as exc:  # the run could not write a cell's folder
            return Taken(group, [], exc)


def _run_pool(queue: GroupQueue, groups: int, runner: CellRunner, executor: Executor,
              options: RunOptions, progress: Progress,
              on_result: Callable[[CellResult], None] | None,
              results: list[CellResult], cores: CompileCores) -> list[str]:
    """Run the `groups` groups of cells (see arch_groups) the queue hands out on a thread
    pool, saving each result as it comes; the cells the run could not write (a full disk,
    a read-only folder), where it then stopped."""
    out = options.out
    # Where the run could not write (a full disk, a read-only folder): it stops there.
    unwritten: list[str] = []

    def stop_writing(cell: Cell, exc: OSError) -> None:
        unwritten.append(f"{cell.id}: {exc.strerror} writing {exc.filename or out / CELLS_DIR}")
        for pending in futures:
            pending.cancel()

    def finished(future: Future[Taken]) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        taken = future.result()
        if taken.unwritable is not None:
            stop_writing(taken.group[0], taken.unwritable)
            return
        for result in taken.results:
            if not result.stages[0].not_started:
                try:
                    save_cell(out, result)
                except OSError as exc:
                    stop_writing(result.cell, exc)
                    return
            results.append(result)
            progress.cell_done(result)
            if on_result:
                on_result(result)

    pool = ThreadPoolExecutor(max_workers=max(1, options.jobs))
    futures = []
    try:
        for _ in range(groups):  # one call per group: the queue says which (its schedule)
            future = pool.submit(_started, progress, runner, queue, cores)
            future.add_done_callback(finished)
            futures.append(future)
        wait(futures)
        for future in futures:  # a cell the run broke on (not one it cancelled) is raised
            if not future.cancelled() and future.exception() is not None:
                future.result()
    except KeyboardInterrupt:
        # Cancel what has not started before stopping what has, so no queued cell starts
        # against a stopped worker pool and reports that as its result.
        for future in futures:
            future.cancel()
        # Marked first, then stopped: an environment whose pip or dpkg-deb ends now is the
        # interrupt's, never its cells' error (common/interruption.py).
        interrupt()
        stop_preparations()
        executor.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        executor.close()
        progress.finish()
        raise
    pool.shutdown(wait=True)
    executor.close()
    progress.finish()
    return unwritten


def _environment_errors(envs: Environments, options: RunOptions) -> dict[str, str]:
    """The environments that could not be prepared, less those the run's --run-timeout
    stopped: those are the limit's (their cells say so), and the run exits as a run out of
    time does, never as one whose environment failed."""
    stopped = str(RunOutOfTime(options.run_timeout or 0.0))
    return {name: why for name, why in envs.failures.items() if why != stopped}


def _environment_facts(options: RunOptions, envs: Environments
                       ) -> tuple[dict[str, dict[str, object]], dict[str, dict[str, object]]]:
    """What each toolkit and library of the run was (with --prebuilt, what built the
    artifacts, on the machine that built them)."""
    toolkits: dict[str, dict[str, object]] = {}
    libraries: dict[str, dict[str, object]] = {}
    earlier = options.prebuilt / "results.json" if options.prebuilt else None
    if earlier and earlier.exists():  # what built the artifacts, on the machine that built them
        try:
            built, _ = load_results(earlier)  # bounded and typed, as every record is read
        except UserError:
            built = None  # its cells said what was wrong with them; no facts to add
        for version, facts in (built.toolkits if built else {}).items():
            toolkits[version] = {**facts, "built_on": built.host if built else ""}
        libraries.update(built.libraries if built else {})
    toolkits.update({v: {"provider": e.provider, "packages": e.packages,
                         "tool_versions": e.tool_versions}
                     for v, e in envs.toolkits.items() if isinstance(e, Environment)})
    libraries.update({f"{n} {v}": {"packages": e.packages}
                      for (n, v, _), e in envs.libraries.items()
                      if isinstance(e, LibraryEnvironment)})
    return toolkits, libraries

