"""GitLab's child pipeline: the plan's jobs (``actions_matrix``, engine-neutral but for
its runner labels) as the YAML a ``trigger: include: artifact`` job runs.

GitLab fans a computed matrix out by a dynamic child pipeline: the parent's plan job writes
this file, the trigger job runs it. Each shard is a job on the runners its tags name (a
runner's labels, ``gpu`` by default); a shard no GPU runner serves has no tags, so a shared
runner builds it. The merge and the Pages job close it. The scripts are the template's
(``config/data/ci/gitlab-child.yml``); what the plan computed (a shard's options, its
runner, the plan itself) reaches them only as job variables, written as JSON strings
(valid YAML) with GitLab's ``$`` doubled, so no value is read as code or as a variable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import Any

from ..errors import UserError

# The pipeline's source, in GitLab's words, where a merge request's code runs.
MERGE_REQUEST_SOURCES = frozenset({"merge_request_event", "external_pull_request_event"})
TIMEOUT_VARIABLE = "CUDAMATRIX_TIMEOUT_MINUTES"
DEFAULT_TIMEOUT_MINUTES = 120
# The settings the child's jobs read, with their defaults (the parent's `variables:`). The
# plan job writes the values it saw (project variables over the parent's YAML) into the
# child's own `variables:`, the lowest precedence there: forwarded from the trigger job
# they would be the highest, and a project variable set in GitLab's settings would lose
# to the parent's YAML default in every shard.
SETTINGS = {"CUDAMATRIX": "", "CUDAMATRIX_PYTHON": "python3", "CUDAMATRIX_PROVIDER": "wheels",
            "CUDAMATRIX_ARGS": "", TIMEOUT_VARIABLE: str(DEFAULT_TIMEOUT_MINUTES),
            "CUDAMATRIX_RETRIES": "1", "CUDAMATRIX_HISTORY_RUNS": "20",
            "CUDAMATRIX_PAGES_URL": ""}


# The image of the jobs on shared runners (a GPU runner's own is the runner's choice): the
# Python cudamatrix needs, and curl.
SHARED_IMAGE = "python:3.11"


def trusted(variables: Mapping[str, str]) -> bool:
    """Whether the pipeline runs code its project's members pushed, from GitLab's own
    variables. Fails closed: a merge request's pipeline is trusted only where its source
    project is known and is this project (a fork's, run here by a maintainer, is not; an
    external pull request, from a mirror's other forge, never is)."""
    source = variables.get("CI_PIPELINE_SOURCE", "")
    if source == "external_pull_request_event":
        return False
    if source != "merge_request_event":
        return True
    origin = variables.get("CI_MERGE_REQUEST_SOURCE_PROJECT_ID", "")
    return bool(origin) and origin == variables.get("CI_PROJECT_ID")


def timeout_minutes(variables: Mapping[str, str]) -> int:
    """A shard's limit in minutes (CUDAMATRIX_TIMEOUT_MINUTES): its run stops 10 minutes
    earlier, so at least 11."""
    said = variables.get(TIMEOUT_VARIABLE, "") or str(DEFAULT_TIMEOUT_MINUTES)
    if not said.isdigit() or int(said) < 11:
        raise UserError(f"{TIMEOUT_VARIABLE}={said!r:.40}: expected whole minutes, at least "
                        "11 (a shard's run stops 10 minutes before its job's limit)")
    return int(said)


def _value(text: str) -> str:
    """`text` as a YAML scalar GitLab reads back as itself: a JSON string (YAML's double
    quotes), ``$`` doubled (GitLab's escape in variables)."""
    return json.dumps(text.replace("$", "$$"))


def _shard(job: Mapping[str, Any], untrusted: bool) -> list[str]:
    """One shard's job: its runner's tags (none: a shared runner), its options and runner
    as variables, its cache keyed by what it holds and who may write it."""
    tags = [] if job.get("not-run") or job["label"] == "cpu" else list(job["runs-on"])
    trust = "untrusted" if untrusted else "trusted"
    # One job writes each cache key (the plan's save-cache); an untrusted pipeline none.
    policy = "pull-push" if job["save-cache"] and not untrusted else "pull"
    lines = [f"{json.dumps(job['name'])}:", "  extends: .cudamatrix-shard"]
    if tags:
        lines += ["  tags:", *(f"    - {_value(tag)}" for tag in tags)]
    else:  # a shared runner's default image (GitLab.com's: Ruby) has no Python 3.11
        lines += [f"  image: {SHARED_IMAGE}"]
    if untrusted:  # a maintainer plays each shard of a fork's merge request
        lines += ["  when: manual", "  allow_failure: false"]
    key = f"cudamatrix-{trust}-{job['cache']}"
    lines += ["  variables:",
              f"    CUDAMATRIX_SHARD_ARGS: {_value(job['args'])}",
              f"    CUDAMATRIX_RUNNER_LABEL: {_value(job['label'])}",
              f"    CUDAMATRIX_SHARD: {_value(job['artifact'])}",
              "  cache:",
              f"    key: {_value(key)}",
              "    paths:",
              "      - .cudamatrix/cache/",
              "      - .cudamatrix/pip-cache/",
              f"    policy: {policy}"]
    if job.get("not-run"):
        lines.insert(1, f"  # no GPU: {job['not-run']}"[:300].replace("\n", " "))
    return lines


def child_pipeline(matrix: Mapping[str, Sequence[Mapping[str, Any]]], tier: str,
                   variables: Mapping[str, str] | None = None) -> str:
    """The child pipeline of `matrix` (``github_matrix``'s jobs, made with no base runner
    labels) for `tier`, as the pipeline whose GitLab `variables` (default: this process's)
    planned it: trusted or not, its shards' time limit."""
    from .. import __version__

    given = os.environ if variables is None else variables
    untrusted = not trusted(given)
    jobs = list(matrix["include"])
    template = (files("cudamatrix.config") / "data" / "ci" / "gitlab-child.yml").read_text()
    shards = "".join("\n".join(_shard(job, untrusted)) + "\n\n" for job in jobs)
    settings = {name: given.get(name) or default for name, default in SETTINGS.items()}
    settings["CUDAMATRIX"] = settings["CUDAMATRIX"] or f"cudamatrix=={__version__}"
    block = "".join(f"  {name}: {_value(value)}\n" for name, value in settings.items())
    what = (f"tier {tier}: {len(jobs)} shard{'' if len(jobs) == 1 else 's'} of "
            f"{sum(j['cells'] for j in jobs)} cells"
            + ("; a fork's merge request: each shard waits for a maintainer" if untrusted
               else ""))
    return (template.replace("@@WHAT@@", what).replace("@@VERSION@@", __version__)
            .replace("@@TIMEOUT@@", str(timeout_minutes(given)))
            .replace("@@SETTINGS@@\n", block)
            .replace("@@SHARDS@@\n", shards)
            .replace("@@PLAN@@", _value(json.dumps(matrix, separators=(",", ":")))))
