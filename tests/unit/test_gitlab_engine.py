"""GitLab as a CI engine (issue 83), the hermetic part: `init --ci gitlab` writes a pinned
`.gitlab-ci.yml`; `plan --ci gitlab` writes the child pipeline (a shard per job on the
runners its tags name, shared runners where no GPU runner serves, a fork's merge request's
shards played by a maintainer and writing no cache, every computed value a variable GitLab
reads back as itself); `report` under GitLab prints a bounded log section and writes the
merge request note within GitLab's limit. The rehearsal under gitlab-ci-local and GitLab's
schema are tests/e2e/test_gitlab.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from cudamatrix import __version__
from cudamatrix.commands.gitlab_pipeline import child_pipeline, trusted
from cudamatrix.config.plan import Cell
from cudamatrix.config.project import CI_FILES, init_project
from cudamatrix.errors import UserError
from cudamatrix.record.baseline import BaselineDiff
from cudamatrix.record.outcomes import Outcome
from cudamatrix.record.results import CellResult
from cudamatrix.reports import gitlab

SAME = {"CI_PIPELINE_SOURCE": "merge_request_event", "CI_PROJECT_ID": "7",
        "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "7"}
FORK = {**SAME, "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "9"}


@pytest.mark.parametrize(("variables", "expected"), [
    ({"CI_PIPELINE_SOURCE": "push"}, True),
    ({"CI_PIPELINE_SOURCE": "schedule"}, True),
    (SAME, True),
    (FORK, False),
    # Fails closed: a merge request whose source project GitLab did not say.
    ({"CI_PIPELINE_SOURCE": "merge_request_event", "CI_PROJECT_ID": "7"}, False),
    ({"CI_PIPELINE_SOURCE": "external_pull_request_event"}, False),
])
def test_a_pipeline_is_trusted_only_where_its_code_is_the_projects(
        variables: dict[str, str], expected: bool) -> None:
    assert trusted(variables) is expected


def _job(name: str, label: str, runs_on: list[str], args: str, **more: object
         ) -> dict[str, object]:
    return {"name": name, "runs-on": runs_on, "label": label, "args": args,
            "artifact": f"results-{label}-1-of-1", "cells": 2, "cache": "0.1.0-abc",
            "save-cache": True, **more}


def _child(jobs: list[dict[str, object]], variables: dict[str, str]) -> dict[str, object]:
    document = yaml.safe_load(child_pipeline({"include": jobs}, "pr", variables))
    assert isinstance(document, dict)
    return document


def test_the_child_pipeline_runs_each_shard_on_its_runners_tags() -> None:
    jobs = [_job("h100 1/1", "h100", ["gpu-h100"], "--tier pr --arch sm_90 --shard 1/1"),
            _job("no-gpu-runner 1/1", "no-gpu-runner", ["ubuntu-latest"],
                 "--tier pr --arch sm_120 --no-gpu --shard 1/1", **{
                     "not-run": "no runner of [runners] has a GPU that runs sm_120",
                     "save-cache": False})]
    child = _child(jobs, {"CI_PIPELINE_SOURCE": "push", "CUDAMATRIX_PAGES_URL": "https://x"})
    gpu, shared = child["h100 1/1"], child["no-gpu-runner 1/1"]
    assert isinstance(gpu, dict) and isinstance(shared, dict)
    assert gpu["tags"] == ["gpu-h100"] and "tags" not in shared  # a shared runner builds it
    assert shared["image"] == "python:3.11" and "image" not in gpu
    assert gpu["variables"]["CUDAMATRIX_SHARD_ARGS"] == "--tier pr --arch sm_90 --shard 1/1"
    assert gpu["cache"] == {"key": "cudamatrix-trusted-0.1.0-abc", "policy": "pull-push",
                            "paths": [".cudamatrix/cache/", ".cudamatrix/pip-cache/"]}
    assert shared["cache"]["policy"] == "pull"  # one job writes each key
    assert "when" not in gpu
    # The settings the plan job saw, for every job of the child (its own variables).
    settings = child["variables"]
    assert isinstance(settings, dict)
    assert settings["CUDAMATRIX"] == f"cudamatrix=={__version__}"
    assert settings["CUDAMATRIX_PAGES_URL"] == "https://x"
    merge = child["cudamatrix-merge"]
    assert isinstance(merge, dict)
    assert json.loads(merge["variables"]["CUDAMATRIX_PLAN"]) == {"include": jobs}
    assert merge["artifacts"]["reports"]["junit"] == "site/junit.xml"
    assert merge["when"] == "always"


def test_a_forks_merge_request_waits_for_a_maintainer_and_writes_no_cache() -> None:
    child = _child([_job("gpu 1/1", "gpu", ["gpu"], "--tier pr --shard 1/1")], FORK)
    shard = child["gpu 1/1"]
    assert isinstance(shard, dict)
    assert shard["when"] == "manual" and shard["allow_failure"] is False
    assert shard["cache"]["key"].startswith("cudamatrix-untrusted-")
    assert shard["cache"]["policy"] == "pull"


def test_every_computed_value_is_read_back_as_itself() -> None:
    """A `$` would be a variable GitLab expands, a quote or a newline YAML's: each value is
    a JSON string with `$` doubled (GitLab's escape), so GitLab reads the text given."""
    args = "--tier pr --case a$HOME --shard 1/1"
    label = 'gpu"x\n  when: never'
    child = child_pipeline({"include": [_job("gpu 1/1", label, [label], args)]}, "pr",
                           {"CUDAMATRIX_ARGS": "--jobs $(id)"})
    document = yaml.safe_load(child)
    shard = document["gpu 1/1"]
    assert shard["variables"]["CUDAMATRIX_SHARD_ARGS"] == args.replace("$", "$$")
    assert shard["tags"] == [label.replace("$", "$$")] and "when" not in shard
    assert document["variables"]["CUDAMATRIX_ARGS"] == "--jobs $$(id)"


def test_a_shard_time_limit_that_is_no_whole_minutes_is_refused() -> None:
    with pytest.raises(UserError, match="CUDAMATRIX_TIMEOUT_MINUTES='2h': expected whole"):
        child_pipeline({"include": []}, "pr", {"CUDAMATRIX_TIMEOUT_MINUTES": "2h"})


def test_plan_writes_the_child_for_gitlab_and_json_for_github(read_cli, tmp_path: Path
                                                              ) -> None:
    assert read_cli("init", cwd=tmp_path).code == 0
    child = read_cli("plan", "--ci", "gitlab", "--cells-per-job", "4", cwd=tmp_path)
    assert child.code == 0, child.output
    document = yaml.safe_load(child.output)
    shards = {k: v for k, v in document.items() if re.fullmatch(r"gpu \d+/\d+", k)}
    assert shards and all(s["tags"] == ["gpu"] for s in shards.values())
    github = read_cli("plan", cwd=tmp_path)
    line = next(ln for ln in github.output.splitlines() if ln.startswith("{"))
    assert json.loads(line)["include"][0]["runs-on"] == ["self-hosted", "linux", "x64", "gpu"]
    refused = read_cli("plan", "--ci", "gitlab", "--github-output", "m", cwd=tmp_path)
    assert refused.code == 2 and "--github-output: GitHub Actions' output" in refused.output


def test_init_writes_a_pinned_gitlab_pipeline(tmp_path: Path) -> None:
    written = init_project(tmp_path, "gitlab")
    assert CI_FILES["gitlab"] in written
    text = (tmp_path / ".gitlab-ci.yml").read_text()
    document = yaml.safe_load(text)
    assert document["variables"]["CUDAMATRIX"] == f"cudamatrix=={__version__}"
    trigger = document["cudamatrix-matrix"]["trigger"]
    assert trigger["include"] == [{"artifact": "cudamatrix-pipeline.yml",
                                   "job": "cudamatrix-plan"}]
    assert trigger["strategy"] == "depend"
    with pytest.raises(UserError, match=r"--workflow 'me/r/x\.yml@v1': GitHub's reusable"):
        init_project(tmp_path / "other", "gitlab", "me/r/x.yml@v1")


def _result(case: str, outcome: Outcome, message: str) -> CellResult:
    return CellResult(cell=Cell(case, "nvrtc", "13.0", "sm_80", "nvrtc"), outcome=outcome,
                      stage="compile", reached="compile", message=message, reason="",
                      expected="", diagnosis=None, stages=(), seconds=1.0)


def test_the_log_section_is_bounded_and_names_what_counts() -> None:
    results = [_result(f"case{i}", "fail", "error: x\n" * 200) for i in range(30)]
    results.append(_result("fine", "pass", ""))
    lines = gitlab.log_section(results, None, started=5)
    assert lines[0].startswith("\x1b[0Ksection_start:5:cudamatrix_summary[collapsed=false]\r")
    assert lines[0].endswith("cudamatrix: 31 cells, pass=1 fail=30")
    assert lines[1] == "30 failures (no baseline: every one counts)"
    assert len(lines) == 2 + gitlab.LOG_CELLS + 2
    assert all(len(line) <= gitlab.LOG_LINE_CHARS for line in lines[2:-2])
    assert "case0/nvrtc/13.0/sm_80: fail at compile: error: x error: x" in lines[2]
    assert lines[-2].startswith("  … 10 more") and lines[-1].startswith("\x1b[0Ksection_end:5:")


def test_no_value_from_a_record_or_the_baseline_opens_or_closes_a_section() -> None:
    """A message's or the baseline's name's newline, ESC or CR cannot end GitLab's section
    early or write to the terminal: only the tool's own two markers are raw."""
    hostile = "x\n\x1b[0Ksection_end:1:cudamatrix_summary\r\x1b]52;c;aGk=\x07"
    lines = gitlab.log_section([_result("bad", "fail", hostile)],
                               BaselineDiff(hostile, new_failures=[]), started=5)
    assert sum("\x1b" in line for line in lines) == 2  # the opening and the closing marker
    assert all("\n" not in line and "\r" not in line for line in lines[1:-1])
    assert "\r" not in lines[0].split("\r\x1b[0K", 1)[1]


def test_the_note_fits_gitlabs_limit_and_says_where_the_rest_is() -> None:
    small = "# report\n\nall good\n"
    assert gitlab.note(small) == small
    huge = "# report\n" + "| a row of the grid |\n" * 100_000
    cut = gitlab.note(huge)
    assert len(cut) <= gitlab.NOTE_LIMIT_CHARS and cut.endswith("pipeline's artifacts.\n")
    assert "| a row of the grid |\n\n… cut to fit GitLab's 1,000,000 character note" in cut


def test_outside_gitlab_nothing_is_published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    monkeypatch.delenv("GITLAB_CI", raising=False)
    report = tmp_path / "COMPATIBILITY.md"
    report.write_text("# report\n")
    assert gitlab.publish(report, [], None) is False
    assert not (tmp_path / gitlab.NOTE_FILE).exists()
    monkeypatch.setenv("GITLAB_CI", "true")
    assert gitlab.publish(report, [], None) is True
    assert (tmp_path / gitlab.NOTE_FILE).read_text() == "# report\n"
