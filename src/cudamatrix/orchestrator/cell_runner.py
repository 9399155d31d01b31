"""A cell's way through the run: its job prepared, its compile taken from the cache or
shared with the cells that differ only in arch, its stages run, judged and retried.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from packaging.version import InvalidVersion, Version

from ..common.removal import emptied, removed
from ..common.up_to_date import InputLedger
from ..config.corpus import Variant
from ..config.options import RunOptions, default_cell_memory
from ..config.plan import Cell
from ..config.planning import Plan
from ..providers.first_release import SINCE_RELEASE, for_run, with_first_release
from ..record.results import (
    CellResult,
)
from ..record.verdict import judge_cell, retried_cell
from ..record.verdict_rules import runs_again
from ..stages.cell.job import Job
from ..stages.cell.result import StageResult
from ..stages.cell.sequence import ended, goes_on
from ..stages.cell.steps import Carried
from ..stages.frontends import frontend
from ..stages.runtime.pipeline import given, run_steps, standard, without_gpu
from .build_cache import BuildCache, build_key
from .cell_jobs import CellJobs, NoJob
from .compile_cache import CompileCache, Unkeyable, compile_key, flag_files, key_files, key_folders
from .compile_strategy import CompileCores
from .cupy_warmup import JitifyWarmups
from .environments import Environments
from .executors import Executor
from .gpu import DeviceInfo


class CellRunner:
    def __init__(self, plan: Plan, options: RunOptions, envs: Environments, device: DeviceInfo,
                 executor: Executor, started: float | None = None, *,
                 ledger: InputLedger, cores: CompileCores | None = None) -> None:
        self.plan, self.options, self.envs = plan, options, envs
        # The run's cores, which a group's one nvcc takes --threads from (compile_strategy).
        self.cores = cores or CompileCores(1, "grouped")
        self.ledger = ledger  # what the run read, and why it could not be answered again
        # Each header library's folders hashed once a run (compile_cache.library_digest).
        self.library_headers: dict[tuple[str, ...], str] = {}
        self.device, self.executor = device, executor
        self.cache = CompileCache(options.cache, enabled=options.compile_cache,
                                  read_from=options.compile_cache_from)
        self.builds = BuildCache(options.cache, enabled=options.compile_cache,
                                 read_from=options.compile_cache_from)
        # The run's limit counts from its start, set-up included: a CI job's own limit does.
        begun = time.monotonic() if started is None else started
        self.deadline = (begun + options.run_timeout) if options.run_timeout else None
        self.memory_bytes = (int(options.cell_memory_gib * (1 << 30)) if options.cell_memory_gib
                             else default_cell_memory(options.jobs))
        self.warmups = JitifyWarmups(options.cache, options.out, options.jitify_warmup_timeout,
                                     self.run_worker, lambda text: self.envs.progress.note(text))
        self.jobs = CellJobs(options, envs, device, self.warmups, self.memory_bytes,
                             self.time_left)

    def time_left(self, cell_limit: float) -> float:
        """A cell's limit, cut to what is left of the run's own (--run-timeout)."""
        if self.deadline is None:
            return cell_limit
        return max(1.0, min(cell_limit, self.deadline - time.monotonic()))

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def prepare(self, cell: Cell, retry: bool = False) -> Prepared:
        """The cell's job and what the compile cache has for it, or the stages that say at
        once why nothing can run; a retry's build case is built again (kept_build)."""
        began = time.monotonic()
        prepared = Prepared(cell, self.plan.variant(cell))
        if self.out_of_time():
            prepared.stages = [StageResult(
                "compile", "timeout", f"not started: the run's {self.options.run_timeout:.0f} s "
                "limit (--run-timeout) was spent", not_started=True)]
            self.ledger.refuse("the run's time limit left cells unstarted")
            return prepared
        job, prepared.versions = self.jobs.job_for(cell, prepared.variant)
        if isinstance(job, NoJob):
            prepared.stages = job.stages
        else:
            prepared.job = job = self.kept_build(prepared, job, retry)
            if job.prebuilt is None and frontend(cell.frontend).cached:
                folders = key_folders(job)
                included = key_files(job, folders)
                for folder in folders:
                    self.ledger.watch(folder)
                # Headers outside them, and the files the flags name (-include pre.h): all
                # the key holds is watched, so an up-to-date answer sees each change.
                named = [os.path.realpath(f) for f in flag_files(job)]
                for file in (*included.files, *included.absent, *named):
                    self.ledger.watch(file, 0)
                try:
                    prepared.key = compile_key(job, self.envs.provider, folders, included,
                                               self.library_headers)
                except Unkeyable as exc:  # compiled, never cached, never "up to date"
                    prepared.cache_note = f"not cached: {exc}"
                    self.ledger.refuse(f"{cell.id}: {exc}")
                else:
                    prepared.covered = frozenset((*included.files, *named))
                    prepared.cached, prepared.cache_note = self.cache.restore(prepared.key,
                                                                              job.work)
        prepared.spent = time.monotonic() - began
        return prepared

    def kept_build(self, prepared: Prepared, job: Job, retry: bool = False) -> Job:
        """A build case's job, taken from the build cache where its build is kept and no
        GPU stage runs here (build_cache.py), as an earlier run's build; else as it was,
        its key noted for the build to be kept once built. A retry builds again, what the
        attempt before it kept dropped (a build that failed once by chance was served its
        failed first attempt)."""
        if job.prebuilt is not None or job.gpu_stages \
                or not frontend(job.frontend).builds_project:
            return job
        prepared.build_key = build_key(job, self.envs.provider, self.options.cache)
        if prepared.build_key is not None and retry:
            self.builds.forget(prepared.build_key)
            return job
        if prepared.build_key is None or not self.builds.restore(prepared.build_key, job.work):
            return job
        prepared.cache_note = "hit"
        prepared.build_key = None
        return replace(job, prebuilt=str(job.work))

    def compile_together(self, group: Sequence[Prepared]) -> None:
        """One compile for the cells of `group` that still need one and differ only in
        arch (compile_together); each cell it decided then goes on as a cache hit would.
        Cells it left (another arch's own step failed first) are built together again,
        without that arch; where the shared build cannot stand for each cell alone, every
        cell is left to build by itself."""
        todo = [p for p in group if p.job is not None and p.cached is None
                and p.job.arch_flag and p.job.prebuilt is None]
        if frontend(group[0].cell.frontend).compile_together is None:
            return
        # One nvcc builds them with one set of flags: a cell whose flags_if gave it
        # others (an arch's own option) builds alone.
        if todo:
            first_flags = todo[0].job.flags if todo[0].job else ()
            todo = [p for p in todo if p.job is not None and p.job.flags == first_flags]
        while len(todo) > 1 and not self.out_of_time():
            stages = self.build_together(todo)
            if len(stages) != len(todo):
                for member in todo:  # said in each cell, which then builds alone
                    member.apart = stages[0].message
                return
            again = []
            for member, stage in zip(todo, stages, strict=True):
                assert member.job is not None
                if stage.status == "skipped":
                    again.append(member)
                    continue
                if not (member.key and self.keep(member, stage)):
                    self.ledger.refuse(f"{member.cell.id}: its compile was not kept")
                member.cached = stage
            todo = again

    def build_together(self, todo: Sequence[Prepared]) -> list[StageResult]:
        """The worker's compile stages for `todo`'s cells, built by one job; each cell is
        charged its share of the time."""
        first = todo[0].job
        assert first is not None
        began = time.monotonic()
        workdir = first.work.parent / f"{first.work.name}.together"
        emptied(workdir)
        job = replace(first, workdir=str(workdir.resolve()), group=tuple(
            {"cell_id": p.cell.id, "arch": p.cell.arch, "workdir": str(p.job.work)}
            for p in todo if p.job is not None))
        try:  # whether the run can be recorded is each cell's (compile_together)
            with self.cores.group_compile(job) as job:  # nvcc --threads for the idle cores
                return self.executor.run(job)
        finally:
            removed(workdir)
            for member in todo:
                member.spent += (time.monotonic() - began) / len(todo)

    def keep(self, prepared: Prepared, stage: StageResult) -> bool:
        """Store a compile in the compile cache, unless the compiler says it read a file
        its key did not hold (a computed `#include` outside the case's folders, which no
        reading of the text can follow): that compile would be served to an edit of the
        file, so it is not kept (the run then leaves no record, as for any compile not kept;
        the stage's `read_outside` names what the compiler read)."""
        assert prepared.key is not None and prepared.job is not None
        missed = [f for f in stage.read_outside if f not in prepared.covered]
        if missed:
            return False
        return self.cache.store(prepared.key, prepared.job.work, stage)

    def execute(self, prepared: Prepared) -> list[StageResult]:
        """The cell's stages (stages/runtime/pipeline.py), its compile result produced one
        of its ways: a fresh compile or an earlier run's (--prebuilt) in the cell's worker;
        a compile-cache hit or its group's shared compile taken back by the worker where a
        GPU runs the rest, or decided here with its inspect, where nothing after that runs
        (no GPU here, or a compile that failed)."""
        job, cached = prepared.job, prepared.cached
        if job is None:
            return prepared.stages
        if cached is not None and not (goes_on([cached]) and self.device.present):
            stages = run_steps(Carried(job), standard(given(cached)), in_worker=False)
        else:
            if cached is not None:  # the worker takes it back from the cell's folder
                job = replace(job, prebuilt=str(job.work))
            stages = self.executor.run(job)
            self.settle(prepared, job, stages)
        if prepared.cache_note:
            stages[0] = replace(stages[0], cache=prepared.cache_note)
        if prepared.apart:  # its group's one compile could not stand for it
            stages[0] = replace(stages[0], built_alone=prepared.apart)
        if not self.device.present:
            stages = without_gpu(stages, self.device.reason)
        return stages

    def settle(self, prepared: Prepared, job: Job, stages: list[StageResult]) -> None:
        """After a worker ran the cell: its fresh compile kept in the cache, and what a
        re-run could not answer from this run said to the ledger."""
        kept = prepared.key is not None and prepared.cached is None \
            and self.keep(prepared, stages[0])
        if job.build_setting is not None and frontend(job.frontend).builds_project:
            # A project's own build is what its tree, its toolkit and its build tools
            # make (each watched: the toolkit and the tools as they were prepared): with
            # the tree watched too, a re-run's answer stands as a kept compile's does,
            # unless the build ended by accident (a signal, its time limit).
            self.ledger.watch(job.build_setting.project)
            kept = stages[0].accident is None \
                and not ended(stages[0])
            if prepared.build_key is not None and stages:
                self.builds.store(prepared.build_key, job.work, stages[0])
        # A compile the cache kept is what a re-run would take from it as it is (the run
        # can still be recorded: up_to_date); a GPU stage it would ask again.
        if not kept:
            self.ledger.refuse(f"{job.cell_id} ran its {job.frontend} stages, which are "
                               "not kept")
        elif job.gpu_stages:
            self.ledger.refuse(f"{job.cell_id} ran on the GPU, which each run asks again")

    def run_worker(self, job: Job) -> list[StageResult]:
        """A worker runs the job (in the cell's container, or as a process here), which a
        re-run would run again: the run leaves no record (up_to_date)."""
        self.ledger.refuse(f"{job.cell_id} ran its {job.frontend} stages")
        return self.executor.run(job)

    def predict_ptx_jit(self, stages: Sequence[StageResult]) -> dict[str, object] | None:
        """Predicted (from the matrix's PTX ISA table) versus measured PTX JIT on this driver."""
        load = next((s for s in stages if s.stage == "load"
                     and s.via == "ptx-jit"), None)
        matrix = self.plan.matrix
        # The driver branch's CUDA version comes from the matrix's table; the version the
        # driver itself reports stands in for branches the table does not list.
        driver_cuda = matrix.driver_supports(self.device.driver) or self.device.driver_cuda
        driver_toolkit = matrix.toolkits.get(driver_cuda)
        if load is None or driver_toolkit is None:
            return None
        ptx_version = str(load.details.get("ptx_version", "?"))
        try:
            predicted = Version(ptx_version) <= Version(driver_toolkit.ptx_isa)
        except InvalidVersion:
            return None
        measured = load.status == "ok"
        return {"ptx_version": ptx_version, "driver_cuda": driver_cuda,
                "driver_ptx_isa": driver_toolkit.ptx_isa,
                "predicted": "loads" if predicted else "refused",
                "measured": "loads" if measured else "refused",
                "agrees": predicted == measured}

    def run_cells(self, cells: Sequence[Cell]) -> list[CellResult]:
        """The cells of one arch group (one cell, or the cells that differ only in arch),
        their compiles shared where their frontend can (compile_together)."""
        prepared = [self.prepare(cell) for cell in cells]
        if len(prepared) > 1 and not self.out_of_time():
            self.compile_together(prepared)
        results = []
        for cell in prepared:
            began = time.monotonic()
            stages = self.execute(cell)
            results.append(self.retried(self.judged(cell, stages,
                                                    cell.spent + time.monotonic() - began)))
        return results

    def retried(self, result: CellResult) -> CellResult:
        """`result`, or where it is not what its case expects and the run allows retries
        (--retries), the cell's next attempt, each earlier one kept in `attempts`; the
        attempts stop at the first that is as its case expects. A compile the cache kept
        answers again as it did (a compiler's refusal is no flake); the GPU's stages and
        whatever the cache did not keep run again."""
        earlier: list[CellResult] = []
        while runs_again(result.outcome, len(earlier), self.options.retries) \
                and not self.out_of_time():
            earlier.append(result)
            again = self.prepare(result.cell, retry=True)
            began = time.monotonic()
            stages = self.execute(again)
            result = self.judged(again, stages, again.spent + time.monotonic() - began)
        return retried_cell(result, earlier)

    def run_cell(self, cell: Cell) -> CellResult:
        return self.run_cells([cell])[0]

    def judged(self, prepared: Prepared, stages: list[StageResult], seconds: float
               ) -> CellResult:
        cell = prepared.cell
        # A compile that lacks a CCCL header or name: the first release that has it, kept
        # with the compile in the cache, so a re-run (or a runner without the index,
        # reading this cache) has it without looking again.
        had = stages[0].details.get(SINCE_RELEASE) if stages else None
        stages = with_first_release(stages, for_run(self.plan.matrix, self.options.cache,
                                                    self.ledger), prepared.versions, cell.toolkit)
        found = stages[0].details.get(SINCE_RELEASE) if stages else None
        if found is not None and had is None and prepared.key is not None:
            self.cache.add_finding(prepared.key, SINCE_RELEASE, found)
        return judge_cell(cell, self.plan.cases[cell.case], prepared.variant, stages,
                          seconds=seconds, versions=prepared.versions,
                          device=self.device.to_dict() if self.device.present else None,
                          prediction=self.predict_ptx_jit(stages))


@dataclass
class Prepared:
    """A cell on its way: its job (or the stages that say why it has none), what the
    compile cache had for it, and whether a shared compile built it."""

    cell: Cell
    variant: Variant
    job: Job | None = None
    stages: list[StageResult] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    key: str | None = None
    # The files the key holds by their bytes beyond its folders (compile_cache.key_files).
    covered: frozenset[str] = frozenset()
    cached: StageResult | None = None
    cache_note: str = ""
    # A build case's key in the build cache, where its build is to be kept once built.
    build_key: str | None = None
    apart: str = ""  # why its group's compile could not stand for it
    # Its seconds so far: its preparation and its share of its group's compile.
    spent: float = 0.0
