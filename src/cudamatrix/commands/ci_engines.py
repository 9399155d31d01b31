"""The CI engines `plan --ci` writes for, behind one shape: each is the labels every one
of its GPU runners has and the text its pipeline reads the plan's jobs from. The plan
(``actions_matrix``: cells packed into shards, one runner each) is the same for all; only
how it is handed over differs: GitHub Actions reads a job matrix as JSON, GitLab runs a
child pipeline (``gitlab_pipeline``). Adding an engine is one module and one entry here."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..common.log_line import json_text
from .actions_matrix import RUNNER_BASE

Matrix = Mapping[str, Sequence[Mapping[str, Any]]]


@dataclass(frozen=True)
class CiEngine:
    """One CI engine's side of `cudamatrix plan`."""

    name: str
    # The labels (GitHub) or tags (GitLab) every GPU runner has, before its own.
    runner_base: tuple[str, ...]
    # The plan's jobs as the text the engine reads: the matrix and its tier.
    render: Callable[[Matrix, str], str]


def _github_render(matrix: Matrix, tier: str) -> str:
    return json_text(matrix)  # one line, as $GITHUB_OUTPUT holds it


def _gitlab_render(matrix: Matrix, tier: str) -> str:
    from .gitlab_pipeline import child_pipeline

    return child_pipeline(matrix, tier)


# GitLab's runners are picked by their own tags alone (no base every runner has).
ENGINES = {engine.name: engine for engine in (
    CiEngine("github", RUNNER_BASE, _github_render),
    CiEngine("gitlab", (), _gitlab_render),
)}
