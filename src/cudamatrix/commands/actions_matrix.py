"""The GitHub Actions matrix: a tier's cells packed into jobs for self-hosted GPU runners.

One runner is enough: without a ``[runners]`` table every cell goes to one runner label,
``gpu`` (its GPU runs each arch natively or by the driver's PTX JIT, and the run says
where it can do neither). Driver labels (``driver-latest``, ``driver-earliest``, as RAPIDS
and cuda-python label their runners) and runners of their own per GPU come only from the
project's ``[runners]`` (config/runners.py) or ``plan --driver``. Each job runs one shard
of one runner's cells; GitHub allows 256 jobs per matrix, so shards grow until the plan
fits.
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.run_flags import words_for
from ..config.runners import Runner, assign, chosen_runners
from ..errors import UserError

if TYPE_CHECKING:
    from ..config.plan import Cell

GITHUB_MAX_JOBS = 256
RUNNER_BASE = ("self-hosted", "linux", "x64")


def _one_word(word: str) -> bool:
    """Whether `word` is read back as itself where a job's args are split (by the shell at
    blanks, by `merge --plan` as a shell would)."""
    try:
        return shlex.split(word) == [word] and word.split() == [word]
    except ValueError:  # an unclosed quote
        return False


def cache_identity(cells: Sequence[Cell], version: str | None = None) -> str:
    """What a shard's cache holds, as a key: the cudamatrix release that fills it and the
    toolkits and library releases its cells need. An upgrade or a new toolkit is a new key
    (restored from the nearest by prefix), never the same key that cannot be saved again."""
    from .. import __version__

    toolkits = sorted({c.toolkit for c in cells})
    libraries = sorted({f"{c.library}=={c.library_version}" for c in cells if c.library})
    held = json.dumps([version or __version__, toolkits, libraries])
    return f"{version or __version__}-{hashlib.sha256(held.encode()).hexdigest()[:16]}"


def github_matrix(cells: Sequence[Cell], tier: str, drivers: Sequence[str] = (),
                  cells_per_job: int = 40, max_jobs: int = GITHUB_MAX_JOBS,
                  gpu: bool = True, compat: bool = False,
                  selection: Sequence[str] = (), runner_base: Sequence[str] = RUNNER_BASE,
                  label_prefix: str = "", runners: Sequence[Runner] = ()
                  ) -> dict[str, list[dict[str, Any]]]:
    """``{"include": [...]}`` for ``strategy.matrix``, one entry per job.

    Each cell goes to one runner (config/runners.py): the project's `runners`, else one
    labelled ``gpu`` (one per driver label in `drivers`). A cell no declared runner serves
    is planned on ``ubuntu-latest`` without a GPU, its job saying why (``not-run``): its
    builds are still checked, and no job waits for a runner nobody has.
    With `compat`, every driver label but ``latest`` also gets jobs that run on NVIDIA's
    forward-compatibility libraries in NVIDIA's images: the same cells, a runner of
    their own (``...+compat``), so the merged report shows both side by side.
    `selection` (``--case x``, ``--toolkit y``) narrows every job as it narrowed the plan.
    Each GPU job runs on `runner_base` plus its runner's labels, the default runner's
    prefixed with `label_prefix` (an organisation's own naming: ``myorg-gpu``).
    """
    if cells_per_job < 1 or max_jobs < 1:
        raise UserError("--cells-per-job and --max-jobs must be at least 1")
    for word in selection:
        if not _one_word(word):  # the workflow splits a job's args at blanks
            raise UserError(f"plan: {word!r}: a job's arguments are split at blanks by the "
                            "workflow and read back by `merge --plan`; name it without "
                            "blanks, quotes or backslashes")
    groups = _groups(cells, gpu, chosen_runners(runners, drivers, label_prefix), compat,
                     runner_base)
    if len(groups) > max_jobs:
        raise UserError(f"{len(groups)} runner set-ups need {len(groups)} jobs, over the "
                        f"{max_jobs} a matrix allows")
    per_job = cells_per_job

    def shards(count: int) -> int:
        return max(1, math.ceil(count / per_job))

    while sum(shards(len(g.cells)) for g in groups) > max_jobs:
        per_job += max(1, per_job // 4)
    include = []
    saving: set[str] = set()
    for group in groups:
        archs = sorted({c.arch for c in group.cells})
        count = shards(len(group.cells))
        for index in range(1, count + 1):
            shard_cells = group.cells[index - 1::count]
            identity = cache_identity(shard_cells)
            args = [*words_for("tier", tier), *words_for("archs", archs), *selection,
                    *words_for("shard", (index, count)), *group.args]
            job: dict[str, Any] = {
                "name": f"{group.label} {index}/{count}", "runs-on": list(group.runs_on),
                "label": group.label, "args": " ".join(args),
                "artifact": f"results-{group.label}-{index}-of-{count}",
                "cells": len(shard_cells), "cache": identity,
                # One job saves each cache, the others restore it: no key is raced.
                "save-cache": identity not in saving}
            if group.not_run:
                job["not-run"] = group.not_run
            include.append(job)
            saving.add(identity)
    return {"include": include}


@dataclass(frozen=True)
class _Group:
    """The cells of one runner set-up, as its jobs run them."""

    label: str
    runs_on: tuple[str, ...]
    cells: list[Cell]
    args: tuple[str, ...] = ()
    not_run: str = ""  # why these cells run on no GPU runner


def _groups(cells: Sequence[Cell], gpu: bool, runners: Sequence[Runner], compat: bool,
            runner_base: Sequence[str]) -> list[_Group]:
    """The plan's runner set-ups, each with its cells: one per runner (and driver), a
    +compat copy of each older driver's, and the cells no runner serves, on no GPU."""
    if not gpu:
        return [_Group("cpu", ("ubuntu-latest",), list(cells), tuple(words_for("gpu", False)))]
    by_arch: dict[str, list[Cell]] = defaultdict(list)
    for cell in cells:
        by_arch[cell.arch].append(cell)
    placed, unserved = assign(sorted(by_arch), runners)
    named = {(r.driver, r.name): r for r in runners}
    groups = []
    for key in sorted(placed, key=lambda k: (k[0] or "", k[1])):
        runner = named[key]
        mine = [c for arch in placed[key] for c in by_arch[arch]]
        label = runner.name if runner.driver is None or runner.name.endswith(
            f"driver-{runner.driver}") else f"{runner.name}-driver-{runner.driver}"
        runs_on = (*runner_base, *runner.labels)
        groups.append(_Group(label, runs_on, mine))
        if compat and runner.driver not in (None, "latest"):
            groups.append(_Group(label + "+compat", runs_on, mine, (
                *words_for("provider", "docker"), *words_for("docker_flavour", "nvidia"),
                *words_for("cuda_compat", True))))
    if unserved:
        lost = [c for arch in sorted(unserved) for c in by_arch[arch]]
        why = "; ".join(unserved[arch] for arch in sorted(unserved))
        groups.append(_Group("no-gpu-runner", ("ubuntu-latest",), lost,
                             tuple(words_for("gpu", False)), not_run=why))
    return groups
