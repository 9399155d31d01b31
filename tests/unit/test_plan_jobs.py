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


def _plan(read_cli, *args: str, cwd: Path = REPO) -> list[dict]:
    run = read_cli("plan", *args, cwd=cwd)
    assert run.code == 0, run.output
    line = next(ln for ln in run.output.splitlines() if ln.startswith("{"))
    return json.loads(line)["include"]


BASE = ["self-hosted", "linux", "x64"]


def test_plan_fits_the_job_limit_and_covers_every_cell(read_cli) -> None:
    cells = len(read_cli("list", "--tier", "nightly").output.strip().splitlines())
    jobs = _plan(read_cli, "--tier", "nightly", "--driver", "earliest", "--driver", "latest",
                 "--max-jobs", "20")
    assert len(jobs) <= 20
    assert sum(j["cells"] for j in jobs) == 2 * cells
    latest = [j for j in jobs if j["label"] == "gpu-driver-latest"]
    assert latest and "--arch sm_90 --arch sm_90a" in latest[0]["args"]
    assert latest[0]["runs-on"] == [*BASE, "gpu", "driver-latest"]


def test_forward_compatibility_jobs_are_runners_of_their_own(read_cli) -> None:
    jobs = _plan(read_cli, "--tier", "gpu", "--driver", "earliest", "--driver", "latest",
                 "--compat")
    labels = {j["label"] for j in jobs}
    assert "gpu-driver-earliest+compat" in labels
    assert "gpu-driver-latest+compat" not in labels  # compat helps older drivers only
    compat = next(j for j in jobs if j["label"].endswith("+compat"))
    assert "--cuda-compat" in compat["args"] and "--docker-flavour nvidia" in compat["args"]
    assert compat["runs-on"][-1] == "driver-earliest"


def _project(read_cli, folder: Path, runners: str = "") -> Path:
    made = read_cli("init", "--ci", "github", cwd=folder)
    assert made.code == 0, made.output
    config = folder / "cudamatrix.toml"
    config.write_text(config.read_text() + runners)
    return folder


def test_one_runner_is_enough_for_inits_tiers(read_cli, tmp_path: Path) -> None:
    """Issue 70, 2: the plan of a project that declares no runner asks for one label, `gpu`
    (the pr tier's sm_80 and sm_90, the nightly's sm_75 to sm_120 alike), and passes every
    cell to it; the workflow's drivers are the runner's own."""
    project = _project(read_cli, tmp_path)
    for tier in ("pr", "nightly"):
        cells = len(read_cli("list", "--tier", tier, cwd=project).output.split())
        jobs = _plan(read_cli, "--tier", tier, cwd=project)
        assert {tuple(j["runs-on"]) for j in jobs} == {(*BASE, "gpu")}, jobs
        assert sum(j["cells"] for j in jobs) == cells and not any("not-run" in j for j in jobs)
    prefixed = _plan(read_cli, "--label-prefix", "myorg-", cwd=project)
    assert {tuple(j["runs-on"]) for j in prefixed} == {(*BASE, "myorg-gpu")}


RUNNERS = """
[runners.a100]
labels = ["gpu-a100"]
gpu = "sm_80"
[runners.h100]
labels = ["gpu-h100"]
gpu = "sm_90"
"""


def test_runners_of_their_own_take_the_archs_their_gpu_runs(read_cli, tmp_path: Path) -> None:
    """[runners]: each arch to a runner whose GPU runs it natively, else by PTX JIT; an
    arch no runner's GPU runs (sm_100a, sm_120 on an A100 and an H100) is planned to build
    on a runner without a GPU, the reason in its job and on stderr, never a job that waits
    for a runner nobody has."""
    project = _project(read_cli, tmp_path, RUNNERS)
    jobs = _plan(read_cli, "--tier", "nightly", cwd=project)
    archs = {j["label"]: set(re.findall(r"--arch (\S+)", j["args"])) for j in jobs}
    assert archs["a100"] == {"sm_75", "sm_80"}  # sm_75 by JIT: the first declared that can
    assert archs["h100"] == {"sm_86", "sm_89", "sm_90", "sm_90a"}
    assert archs["no-gpu-runner"] == {"sm_100a", "sm_120"}
    lost = next(j for j in jobs if j["label"] == "no-gpu-runner")
    assert lost["runs-on"] == ["ubuntu-latest"] and "--no-gpu" in lost["args"]
    assert "no runner of [runners] has a GPU that runs sm_120" in lost["not-run"]
    assert next(j for j in jobs if j["label"] == "h100")["runs-on"] == [*BASE, "gpu-h100"]
    said = read_cli("plan", "--tier", "nightly", cwd=project)
    assert "build without a GPU: no runner of [runners]" in said.output
    cells = len(read_cli("list", "--tier", "nightly", cwd=project).output.split())
    assert sum(j["cells"] for j in jobs) == cells


def test_runners_stand_for_drivers(read_cli, tmp_path: Path) -> None:
    project = _project(read_cli, tmp_path, """
[runners.old]
labels = ["gpu", "driver-535"]
driver = "earliest"
[runners.new]
labels = ["gpu", "driver-580"]
driver = "latest"
""")
    both = _plan(read_cli, cwd=project)
    assert {tuple(j["runs-on"][3:]) for j in both} == {("gpu", "driver-535"),
                                                       ("gpu", "driver-580")}
    assert {j["label"] for j in both} == {"old-driver-earliest", "new-driver-latest"}
    one = _plan(read_cli, "--driver", "latest", cwd=project)
    assert {j["label"] for j in one} == {"new-driver-latest"}
    missing = read_cli("plan", "--driver", "beta", cwd=project)
    assert missing.code == 2 and "no runner of [runners] stands for it" in missing.output


def test_a_runner_table_is_checked(read_cli, tmp_path: Path) -> None:
    project = _project(read_cli, tmp_path, '\n[runners.x]\nlabels = ["gpu"]\ngpus = "sm_90"\n')
    said = read_cli("plan", cwd=project)
    assert said.code == 2 and "runners.x" in said.output and "gpus" in said.output
    (project / "cudamatrix.toml").write_text(
        (project / "cudamatrix.toml").read_text().replace('gpus = "sm_90"', 'gpu = "sm_9"'))
    said = read_cli("plan", cwd=project)
    assert said.code == 2 and "runners.x.gpu" in said.output


def test_serving_natively_or_by_ptx_jit() -> None:
    from cudamatrix.config.runners import serves

    assert serves("sm_90", "sm_90a") == "natively" and serves("sm_86", "sm_80") == "natively"
    assert serves("sm_90", "sm_80") == "by PTX JIT"
    assert serves("sm_80", "sm_90a") is None and serves("sm_100", "sm_90a") is None
    assert serves("sm_80", "sm_86") is None
    assert serves("sm_120", "sm_100f") is None and serves("sm_103", "sm_100f") == "natively"
    assert serves(None, "sm_120") == "natively"


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
