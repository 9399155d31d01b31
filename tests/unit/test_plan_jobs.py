"""`cudamatrix plan`'s GitHub Actions jobs, and the workflow that runs them: the plan fits
GitHub's 256-job limit and covers every cell, forward-compatibility jobs are runners of
their own, every action is pinned and an untrusted change runs nothing unapproved, this
repository's caller passes only declared inputs, and a shard's cache key follows what it
holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import REPO
from workflow_rehearsal import REUSABLE


def _plan(read_cli, *args: str) -> list[dict]:
    run = read_cli("plan", *args)
    assert run.code == 0, run.output
    return json.loads(run.output.strip().splitlines()[-1])["include"]


def test_plan_fits_the_job_limit_and_covers_every_cell(read_cli) -> None:
    cells = len(read_cli("list", "--tier", "nightly").output.strip().splitlines())
    jobs = _plan(read_cli, "--tier", "nightly", "--driver", "earliest", "--driver", "latest",
                 "--max-jobs", "20")
    assert len(jobs) <= 20
    assert sum(j["cells"] for j in jobs) == 2 * cells
    sm90 = [j for j in jobs if j["label"] == "gpu-sm_90-driver-latest"]
    assert sm90 and "--arch sm_90 --arch sm_90a" in sm90[0]["args"]
    assert sm90[0]["runs-on"] == ["self-hosted", "linux", "x64", "gpu-sm_90", "driver-latest"]


def test_forward_compatibility_jobs_are_runners_of_their_own(read_cli) -> None:
    jobs = _plan(read_cli, "--tier", "gpu", "--driver", "earliest", "--driver", "latest",
                 "--compat")
    labels = {j["label"] for j in jobs}
    assert "gpu-sm_90-driver-earliest+compat" in labels
    assert "gpu-sm_90-driver-latest+compat" not in labels  # compat helps older drivers only
    compat = next(j for j in jobs if j["label"].endswith("+compat"))
    assert "--cuda-compat" in compat["args"] and "--docker-flavour nvidia" in compat["args"]
    assert compat["runs-on"][-1] == "driver-earliest"


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


def test_this_repository_calls_the_same_reusable_workflow(tmp_path: Path) -> None:
    """matrix.yml passes only inputs the reusable workflow declares (checked by reading it
    the way the rehearsal does, without running anything)."""
    import yaml

    caller = yaml.safe_load((REPO / ".github" / "workflows" / "matrix.yml").read_text())
    (job,) = caller["jobs"].values()
    assert job["uses"] == "./.github/workflows/cudamatrix.yml"
    declared = yaml.safe_load(REUSABLE.read_text())[True]["workflow_call"]["inputs"]
    assert set(job["with"]) <= set(declared)


def test_the_cache_key_follows_what_a_shard_holds() -> None:
    """An upgrade of cudamatrix, or another toolkit or library in the shard, is a new key;
    the same shard of the same release is the same key."""
    from cudamatrix.commands.actions_matrix import cache_identity
    from cudamatrix.config.plan import Cell

    cells = [Cell("saxpy", "nvrtc", "13.0", "sm_90", "nvrtc")]
    same = cache_identity(cells, "0.1.0")
    assert cache_identity(list(cells), "0.1.0") == same
    upgraded = cache_identity(cells, "0.2.0")
    assert upgraded != same and upgraded.startswith("0.2.0-")
    older_toolkit = Cell("saxpy", "nvrtc", "12.8", "sm_90", "nvrtc")
    assert cache_identity([*cells, older_toolkit], "0.1.0") != same

    def gemm(version: str) -> list[Cell]:
        return [Cell("g", "cutlass", "13.0", "sm_90", "cutlass", library="cutlass",
                     library_version=version)]

    assert cache_identity(gemm("4.2.0"), "0.1.0") != cache_identity(gemm("4.3.0"), "0.1.0")
