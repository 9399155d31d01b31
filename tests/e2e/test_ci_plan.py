"""The CI path on one machine: plan -> every shard -> merge gives the unsharded report; the
plan fits GitHub's 256-job limit; merging refuses overlapping shards."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from conftest import REPO, Run, main_job_cache
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


def test_plan_fits_the_job_limit_and_covers_every_cell(run_cli) -> None:
    cells = len(run_cli("list", "--tier", "nightly").output.strip().splitlines())
    jobs = _plan(run_cli, "--tier", "nightly", "--driver", "earliest", "--driver", "latest",
                 "--max-jobs", "20")
    assert len(jobs) <= 20
    assert sum(j["cells"] for j in jobs) == 2 * cells
    sm90 = [j for j in jobs if j["label"] == "gpu-sm_90-driver-latest"]
    assert sm90 and "--arch sm_90 --arch sm_90a" in sm90[0]["args"]
    assert sm90[0]["runs-on"] == ["self-hosted", "linux", "x64", "gpu-sm_90", "driver-latest"]


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


def test_forward_compatibility_jobs_are_runners_of_their_own(run_cli) -> None:
    jobs = _plan(run_cli, "--tier", "gpu", "--driver", "earliest", "--driver", "latest",
                 "--compat")
    labels = {j["label"] for j in jobs}
    assert "gpu-sm_90-driver-earliest+compat" in labels
    assert "gpu-sm_90-driver-latest+compat" not in labels  # compat helps older drivers only
    compat = next(j for j in jobs if j["label"].endswith("+compat"))
    assert "--cuda-compat" in compat["args"] and "--docker-flavour nvidia" in compat["args"]
    assert compat["runs-on"][-1] == "driver-earliest"


def test_cuda_compat_needs_nvidia_images(run_cli, tmp_path: Path) -> None:
    run = run_cli("run", "--cuda-compat", "--case", "marlin-sm75", out=tmp_path / "out")
    assert run.code == 2 and "--docker-flavour nvidia" in run.output


def test_workflow_pins_every_action_and_fails_closed() -> None:
    """Issue 11, point 12: actions by SHA, untrusted decided positively, caches off the
    runner's disk, the provider named, lost shards merged with the plan: in the reusable
    workflow every caller runs (issue 25), which this repository's matrix.yml calls."""
    workflow = (REPO / ".github" / "workflows" / "cudamatrix.yml").read_text()
    caller = (REPO / ".github" / "workflows" / "matrix.yml").read_text()
    assert re.findall(r"uses:\s*(\S+)", caller) == ["./.github/workflows/cudamatrix.yml"]
    uses = re.findall(r"uses:\s*(\S+)(.*)", workflow)
    assert uses
    for action, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", action), action
        assert re.fullmatch(r"\s*# v\d+\.\d+\.\d+", comment), (action, comment)
    # A deleted fork has no head repository: only "head is this repository" is trusted.
    assert "github.event.pull_request.head.repo.full_name != github.repository" in workflow
    assert "head.repo.fork" not in workflow
    assert "needs: [plan, gate]" in workflow and "required_reviewers" in workflow
    assert "~/.cache/pip" not in workflow and "github.workspace" not in workflow
    assert 'run --provider "$PROVIDER" $ARGS $SHARD_ARGS' in workflow
    assert re.search(r"provider:\n(?:\s+.*\n)*?\s+default: wheels", workflow)
    assert "--plan plan.json" in workflow
