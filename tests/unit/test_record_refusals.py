"""A run whose compile was not kept leaves no up-to-date record (issue 43: dropping that
refusal for a group built together survived every test). The runner's own rule, driven
with a group whose shared compile the cache does not keep."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.cell_runner import CellRunner, Prepared
from cudamatrix.orchestrator.compile_cache import CompileCache
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult


def _member(tmp_path: Path, arch: str) -> Prepared:
    cell = Cell("c", "v", "13.0", arch, "nvcc")
    work = tmp_path / arch
    work.mkdir()
    job = Job(cell_id=cell.id, arch=arch, source=str(tmp_path / "k.cu"), frontend="nvcc",
              workdir=str(work), timeout=60)
    prepared = Prepared(cell, SimpleNamespace(name="v"))  # type: ignore[arg-type]
    prepared.job, prepared.key = job, f"{arch}-key".ljust(64, "0")
    return prepared


def _runner(tmp_path: Path, stages: list[StageResult]) -> CellRunner:
    runner = object.__new__(CellRunner)
    runner.cache = CompileCache(tmp_path / "cache")
    runner.deadline = None
    runner.ledger = InputLedger()
    runner.build_together = lambda todo: stages  # type: ignore[method-assign]
    return runner


def test_a_group_compile_the_cache_did_not_keep_refuses_the_record(tmp_path: Path) -> None:
    group = [_member(tmp_path, "sm_80"), _member(tmp_path, "sm_90")]
    # The memory limit ended one arch's step: an accident, never kept.
    stages = [StageResult("compile", "ok", "", ""),
              StageResult("compile", "error", "memory limit", "", accident="x")]
    runner = _runner(tmp_path, stages)
    runner.compile_together(group)
    assert [p.cached for p in group] == stages
    assert any("c/v/13.0/sm_90: its compile was not kept" in r for r in runner.ledger.refusals), \
        runner.ledger.refusals
    assert not any("sm_80" in r for r in runner.ledger.refusals)  # the kept one is no reason
