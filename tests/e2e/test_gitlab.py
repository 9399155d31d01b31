"""GitLab CI as a second engine (issue 83), rehearsed: in a fresh project, `cudamatrix init
--ci gitlab` writes a `.gitlab-ci.yml` that GitLab's own CI schema accepts (the copy
gitlab-ci-local ships, read from tools/gitlab-ci-local/node_modules), and its pipeline runs
end to end under gitlab-ci-local's shell executor: the plan job, the child pipeline it
writes (two compile-only shards, the merge, pages), the report and junit.xml where GitLab
reads them; a cell that failed in the published run does not fail a merge request's
pipeline, a new one does.

Project variables are gitlab-ci-local's `.gitlab-ci-local-variables.yml` (as GitLab's
Settings -> CI/CD -> Variables, they win over the file's); the published Pages are a folder
served on 127.0.0.1. Each job installs cudamatrix from this checkout's wheel, offline from a
wheelhouse made once (PIP_NO_INDEX, as a runner with a package mirror would)."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO, SHARED_CACHE, cudamatrix, private_cache

TOOL = REPO / "tools" / "gitlab-ci-local"
GITLAB_CI_LOCAL = TOOL / "node_modules" / "gitlab-ci-local" / "src" / "index.js"
BROKEN_CASE = """\
title = "{name}: a kernel that does not compile"

[[variant]]
name = "nvrtc"
source = "k.cu"
frontend = "nvrtc"
kernel = "k"
"""


def _need_the_tool() -> None:
    if not shutil.which("node") or not GITLAB_CI_LOCAL.exists():
        pytest.skip("gitlab-ci-local's npm package is not installed (nox -s tests installs it: "
                    "npm ci --prefix tools/gitlab-ci-local)")
    if not shutil.which("rsync"):
        pytest.skip("rsync is not installed (gitlab-ci-local's shell isolation copies with it)")


def gitlab_schema() -> dict[str, object]:
    """GitLab's CI schema (its app/assets/javascripts/editor/schema/ci.json), from the copy
    gitlab-ci-local ships."""
    _need_the_tool()
    printed = subprocess.run(["node", str(TOOL / "schema.mjs")], capture_output=True,
                             text=True, check=True, cwd=TOOL)
    schema: dict[str, object] = json.loads(printed.stdout)
    return schema


def _schema_errors(document: object) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft7Validator(gitlab_schema())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
            for e in validator.iter_errors(document)]


def _yaml(text: str) -> object:
    import yaml

    return yaml.safe_load(text)


def _commit(project: Path) -> None:
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit",
                    "-qm", "change"], cwd=project, check=True)


def _project(root: Path) -> Path:
    """A fresh git project with what `init --ci gitlab` writes, trimmed to the cheap
    kernels on one toolkit, and a case that has always failed."""
    project = root / "mylib"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    done = cudamatrix("init", "--ci", "gitlab", cwd=project)
    assert done.code == 0, done.output
    shutil.rmtree(project / "cudamatrix-cases" / "saxpy-build")
    config = project / "cudamatrix.toml"
    config.write_text(config.read_text().replace('toolkit = ["12.4", "12.8", "13.0"]',
                                                 'toolkit = ["13.0"]'))
    _add_failing_case(project, "old-bug")
    (project / ".gitignore").write_text(".gitlab-ci-local/\n.gitlab-ci-local-variables.yml\n")
    _commit(project)
    return project


def _add_failing_case(project: Path, name: str) -> None:
    folder = project / "cudamatrix-cases" / name
    folder.mkdir(parents=True)
    (folder / "case.toml").write_text(BROKEN_CASE.format(name=name))
    (folder / "k.cu").write_text(f'#error "{name} is broken"\n__global__ void k(float *x) {{}}\n')


def test_init_writes_a_pipeline_gitlabs_schema_accepts_and_the_github_path_is_unchanged(
        tmp_path: Path) -> None:
    _need_the_tool()
    project = _project(tmp_path)
    pipeline = (project / ".gitlab-ci.yml").read_text()
    assert _schema_errors(_yaml(pipeline)) == []
    assert 'CUDAMATRIX: "cudamatrix==' in pipeline  # pinned to the installed release
    # The child pipelines the plan writes: a trusted one, and a fork's merge request's.
    for variables in ({}, {"CI_PIPELINE_SOURCE": "merge_request_event",
                           "CI_PROJECT_ID": "7", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "8"}):
        planned = subprocess.run(
            [sys.executable, "-m", "cudamatrix", "plan", "--ci", "gitlab", "--cells-per-job",
             "1", "--case", "old-bug"], cwd=project, capture_output=True, text=True,
            env={**os.environ, **variables}, check=False)
        assert planned.returncode == 0, planned.stderr
        child = _yaml(planned.stdout)
        assert _schema_errors(child) == [], planned.stdout
        assert isinstance(child, dict)
        assert child["cudamatrix-merge"]["artifacts"]["reports"]["junit"] == "site/junit.xml"
        shards = {k: v for k, v in child.items() if k.startswith("gpu ")}
        assert len(shards) == 2 and all(s["tags"] == ["gpu"] for s in shards.values())
        fork = bool(variables)
        assert all((s.get("when") == "manual") == fork for s in shards.values())
        assert all(s["cache"]["policy"] == "pull" for s in shards.values()) or not fork
    # The GitHub path: the same project gets the same caller as before.
    assert cudamatrix("init", "--ci", "github", cwd=project).code == 0
    assert (project / ".github" / "workflows" / "cudamatrix.yml").exists()
    again = cudamatrix("init", "--ci", "gitlab", cwd=project)
    assert again.code == 2 and "already exists" in again.output


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """This checkout's wheel and every wheel it needs, made once, and the Python a runner
    has (a fresh one, without cudamatrix)."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder),
                    str(REPO)], check=True, capture_output=True)
    (built,) = folder.glob("cudamatrix-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(folder), str(built)],
                   check=True, capture_output=True)
    runner = tmp_path_factory.mktemp("runner-python")
    venv.create(runner, with_pip=True)
    return built, runner / "bin" / "python"


@pytest.fixture
def pages(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """GitLab Pages: a folder served on 127.0.0.1, and its address."""
    folder = tmp_path / "pages"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _jobs(log: str) -> dict[str, str]:
    """Each job's outcome from gitlab-ci-local's closing lines (PASS, FAIL), a child
    pipeline's job named without its trigger job's prefix ("[cudamatrix-matrix] -> ")."""
    found = re.finditer(r"^\s*(PASS|FAIL|WARN)\s+(?:\[[^\]]*\] -> )?(.+?)\s*$", log, re.M)
    return {m[2]: m[1] for m in found}


def _pipeline(project: Path, wheelhouse: Path, *variables: str) -> str:
    """One pipeline of `project` under gitlab-ci-local's shell executor, each job in a
    folder of its own (artifacts and caches moved between them as GitLab moves them); its
    log. Each job's outcome is read from the log: gitlab-ci-local's own exit status does
    not carry a child pipeline's (`strategy: depend`, which GitLab honours). Each job starts
    from a clean checkout, as GitLab's does (`git clean -ffdx`): gitlab-ci-local keeps a
    job's folder between pipelines, so a merge would find the last pipeline's shards there.
    """
    shutil.rmtree(project / ".gitlab-ci-local" / "builds", ignore_errors=True)
    done = subprocess.run(
        ["node", str(GITLAB_CI_LOCAL), "--shell-isolation", "--force-shell-executor",
         "--no-color", "--concurrency", "2", "--ignore-predefined-vars", "GITLAB_CI",
         # Artifacts stay GitLab's (gitlab-ci-local copies them into the checkout by
         # default, where the next pipeline's jobs would find them).
         "--no-artifacts-to-source",
         *(word for v in variables for word in ("--variable", v))],
        cwd=project, capture_output=True, text=True, timeout=900, check=False,
        # A runner's environment: not this test session's PYTHONPATH (pip would take the
        # checkout's metadata there for an installed cudamatrix and install nothing).
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
             "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse)})
    return done.stdout + done.stderr


def test_the_pipeline_rehearsed_under_gitlab_ci_local(
        tmp_path: Path, wheelhouse: tuple[Path, Path], pages: tuple[Path, str]) -> None:
    _need_the_tool()
    wheel, python = wheelhouse
    published, url = pages
    project = _project(tmp_path)
    # The project's variables, as GitLab's settings give them to every job of every
    # pipeline (the child's too), each a plain variable (gitlab-ci-local reads a bare path
    # as a file's); a secret beside them, which no cell may see.
    variables = {"GITLAB_CI": "true", "CUDAMATRIX": str(wheel),
                 "CUDAMATRIX_PYTHON": str(python), "CUDAMATRIX_SELECT": "--cells-per-job 2",
                 "CUDAMATRIX_PAGES_URL": url, "DEPLOY_TOKEN": "s3cret-never-in-a-cell"}
    (project / ".gitlab-ci-local-variables.yml").write_text(json.dumps(
        {name: {"type": "variable", "values": {"*": value}} for name, value in variables.items()}))
    # The runner's cache, as GitLab restores it: the shards' key (the plan's), holding a
    # cache of this test's own whose downloads are the shared ones.
    planned = subprocess.run([sys.executable, "-m", "cudamatrix", "plan", "--ci", "gitlab",
                              "--cells-per-job", "2"], cwd=project, capture_output=True,
                             text=True, check=True)
    (key,) = set(re.findall(r'key: "(cudamatrix-trusted-[^"]+)"', planned.stdout))
    restored = project / ".gitlab-ci-local" / "cache" / key / ".cudamatrix"
    restored.mkdir(parents=True)
    (tmp_path / "runner-cache").mkdir()
    shutil.move(str(private_cache(tmp_path / "runner-cache")), restored / "cache")
    assert (restored / "cache" / "toolkits").resolve() == (SHARED_CACHE / "toolkits").resolve()

    # The default branch's pipeline: no baseline yet (said, not silent), so the old bug
    # fails the merge; Pages still publish the report, the next runs' baseline.
    log = _pipeline(project, wheel.parent)
    jobs = _jobs(log)
    assert jobs.get("cudamatrix-plan") == "PASS", log[-6000:]
    assert jobs.get("gpu 1/2") == jobs.get("gpu 2/2") == "PASS", log[-6000:]
    assert jobs.get("cudamatrix-merge") == "FAIL" and jobs.get("pages") == "PASS", log[-6000:]
    assert "no baseline:" in log and "could not be read" in log
    # The log's section (gitlab-ci-local shows its name where GitLab folds it).
    assert "cudamatrix_summary" in log and "2 failures (no baseline: every one counts)" in log
    artifacts = project / ".gitlab-ci-local" / "artifacts"
    site = artifacts / "cudamatrix-merge" / "site"
    assert (site / "junit.xml").is_file()  # where the child's reports:junit names it
    assert (site / "gitlab-note.md").read_text().startswith("#")
    merged = json.loads((site / "results.json").read_text())
    assert sorted(c["id"] for c in merged["cells"]) == [
        "old-bug/nvrtc/13.0/sm_80", "old-bug/nvrtc/13.0/sm_90",
        "saxpy/nvrtc/13.0/sm_80", "saxpy/nvrtc/13.0/sm_90"]
    public = artifacts / "pages" / "public"
    assert json.loads((public / "badge.json").read_text())["schemaVersion"] == 1
    assert len(json.loads((public / "history.json").read_text())["runs"]) == 1
    shards = sorted(p.name for p in artifacts.glob("gpu*/shards/*"))
    assert shards == ["results-gpu-1-of-2", "results-gpu-2-of-2"], shards
    assert "s3cret-never-in-a-cell" not in "".join(
        p.read_text(errors="replace") for p in artifacts.rglob("*") if p.is_file()
        and p.suffix in (".json", ".txt", ".log"))
    shutil.copytree(public, published, dirs_exist_ok=True)  # GitLab deploys Pages

    # A merge request that breaks nothing: the old bug fails as it did, the pipeline passes.
    merge_request = ("CI_PIPELINE_SOURCE=merge_request_event",
                     "CI_MERGE_REQUEST_SOURCE_PROJECT_ID=1217")  # this project's own id
    subprocess.run(["git", "checkout", "-qb", "topic"], cwd=project, check=True)
    log = _pipeline(project, wheel.parent, *merge_request)
    jobs = _jobs(log)
    assert jobs.get("cudamatrix-merge") == "PASS", log[-6000:]
    assert "pages" not in jobs  # a merge request publishes nothing
    site = artifacts / "cudamatrix-merge" / "site"
    assert len(json.loads((site / "history.json").read_text())["runs"]) == 2
    assert "0 new failures" in log

    # A merge request that breaks a kernel: the merge fails naming it, not the old bug.
    _add_failing_case(project, "new-bug")
    _commit(project)
    log = _pipeline(project, wheel.parent, *merge_request)
    jobs = _jobs(log)
    assert [jobs[f"gpu {i}/3"] for i in (1, 2, 3)] == ["PASS"] * 3, log[-6000:]
    assert jobs.get("cudamatrix-merge") == "FAIL", log[-6000:]
    assert "new failure: new-bug/nvrtc/13.0/sm_80" in log, log[log.rfind("cudamatrix-merge"):]
    assert "new failure: old-bug" not in log
