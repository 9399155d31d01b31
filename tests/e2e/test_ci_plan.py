"""The CI path on one machine: plan -> every shard -> merge gives the unsharded report;
merging refuses overlapping shards. (The plan's jobs themselves, read from files alone:
tests/unit/test_plan_jobs.py.)"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from conftest import Run, main_job_cache
from cudamatrix.config.options import COMPILE_CACHE_FROM_ENV
from cudamatrix.record.merge import report_differences


def _plan(run_cli, *args: str) -> list[dict]:
    run = run_cli("plan", *args)
    assert run.code == 0, run.output
    return json.loads(run.output.strip().splitlines()[-1])["include"]


def test_plan_shards_merge_equals_unsharded(run_cli, tmp_path: Path, main_job: Run) -> None:
    """What this checks is the sharding and the merge, not the compilers: the shards and
    the whole run take the default tier's compiles from the main job's cache (read only,
    the same entries for both sides), as a CI job restoring a cache would."""
    shared = {COMPILE_CACHE_FROM_ENV: str(main_job_cache(main_job))}
    jobs = _plan(run_cli, "--cpu", "--cells-per-job", "60")
    assert len(jobs) >= 2 and all(j["runs-on"] == ["ubuntu-latest"] for j in jobs)
    shards = []
    for number, job in enumerate(jobs):
        out = tmp_path / f"shard{number}"
        run = run_cli("run", *shlex.split(job["args"]), out=out, env=shared)
        assert run.code == 0, run.output[-2000:]
        assert len(run.cells()) == job["cells"]
        shards.append(str(out))
    merged = run_cli("merge", *shards, out=tmp_path / "merged")
    assert merged.code == 0, merged.output
    whole = run_cli("run", "--no-gpu", out=tmp_path / "whole", env=shared)
    assert whole.code == 0
    assert report_differences(tmp_path / "merged", tmp_path / "whole") == []
    assert len(merged.cells()) == len(whole.cells())


def test_merge_refuses_overlap_and_keeps_runners_apart(run_cli, tmp_path: Path) -> None:
    args = ("run", "--case", "marlin-sm75", "--toolkit", "12.4", "--arch", "sm_80")
    for name, label in (("a", "gpu-sm_80-driver-latest"), ("b", "gpu-sm_80-driver-earliest")):
        assert run_cli(*args, "--runner-label", label, out=tmp_path / name).code == 0
    overlap = run_cli("merge", str(tmp_path / "a"), str(tmp_path / "a"), out=tmp_path / "m1")
    assert overlap.code == 2 and "is in both" in overlap.output
    both = run_cli("merge", str(tmp_path / "a"), str(tmp_path / "b"), out=tmp_path / "m2")
    assert both.code == 0, both.output
    ids = set(both.cells())
    assert "marlin-sm75/arch-guard/12.4/sm_80@gpu-sm_80-driver-latest" in ids
    assert "marlin-sm75/arch-guard/12.4/sm_80@gpu-sm_80-driver-earliest" in ids
    assert "on gpu-sm_80-driver-earliest" in (tmp_path / "m2" / "COMPATIBILITY.md").read_text()


def test_cuda_compat_needs_nvidia_images(run_cli, tmp_path: Path) -> None:
    run = run_cli("run", "--cuda-compat", "--case", "marlin-sm75", out=tmp_path / "out")
    assert run.code == 2 and "--docker-flavour nvidia" in run.output
