"""The GitHub Actions matrix: a tier's cells packed into jobs for self-hosted GPU runners.

Each job runs one shard of the cells that need one kind of GPU (``gpu-sm_90`` for
sm_90 and sm_90a builds, and so on) on one driver label (``driver-latest``,
``driver-earliest`` or an explicit branch, as RAPIDS and cuda-python label their
runners). GitHub allows 256 jobs per matrix, so shards grow until the plan fits.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shlex
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..config.run_flags import words_for
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


def gpu_label(arch: str) -> str:
    """The runner label of the GPU a cell built for `arch` should run on."""
    return "gpu-" + re.sub(r"[af]$", "", arch)


def cache_identity(cells: Sequence[Cell], version: str | None = None) -> str:
    """What a shard's cache holds, as a key: the cudamatrix release that fills it and the
    toolkits and library releases its cells need. An upgrade or a new toolkit is a new key
    (restored from the nearest by prefix), never the same key that cannot be saved again."""
    from .. import __version__

    toolkits = sorted({c.toolkit for c in cells})
    libraries = sorted({f"{c.library}=={c.library_version}" for c in cells if c.library})
    held = json.dumps([version or __version__, toolkits, libraries])
    return f"{version or __version__}-{hashlib.sha256(held.encode()).hexdigest()[:16]}"


def github_matrix(cells: Sequence[Cell], tier: str, drivers: Sequence[str] = ("latest",),
                  cells_per_job: int = 40, max_jobs: int = GITHUB_MAX_JOBS,
                  gpu: bool = True, compat: bool = False,
                  selection: Sequence[str] = (), runner_base: Sequence[str] = RUNNER_BASE,
                  label_prefix: str = "") -> dict[str, list[dict[str, Any]]]:
    """``{"include": [...]}`` for ``strategy.matrix``, one entry per job.

    With `compat`, every driver label but ``latest`` also gets jobs that run on NVIDIA's
    forward-compatibility libraries in NVIDIA's images: the same cells, a runner of
    their own (``...+compat``), so the merged report shows both side by side.
    `selection` (``--case x``, ``--toolkit y``) narrows every job as it narrowed the plan.
    Each GPU job runs on `runner_base` plus its GPU and driver labels, those prefixed with
    `label_prefix` (an organisation's own naming: ``myorg-gpu-sm_90``).
    """
    if cells_per_job < 1 or max_jobs < 1:
        raise UserError("--cells-per-job and --max-jobs must be at least 1")
    for word in selection:
        if not _one_word(word):  # the workflow splits a job's args at blanks
            raise UserError(f"plan: {word!r}: a job's arguments are split at blanks by the "
                            "workflow and read back by `merge --plan`; name it without "
                            "blanks, quotes or backslashes")
    groups: dict[str, list[Cell]] = defaultdict(list)
    for cell in cells:
        groups[gpu_label(cell.arch) if gpu else "cpu"].append(cell)
    drivers = tuple(drivers) if gpu else ("",)
    variants = [(d, False) for d in drivers]
    if gpu and compat:
        variants += [(d, True) for d in drivers if d != "latest"]
    floor = len(groups) * len(variants)
    if floor > max_jobs:
        raise UserError(f"{len(groups)} GPU kinds x {len(variants)} driver set-ups need {floor} "
                        f"jobs, over the {max_jobs} a matrix allows")
    per_job = cells_per_job

    def shards(count: int) -> int:
        return max(1, math.ceil(count / per_job))

    while sum(shards(len(c)) for c in groups.values()) * len(variants) > max_jobs:
        per_job += max(1, per_job // 4)
    include = []
    saving: set[str] = set()
    for group in sorted(groups):
        archs = sorted({c.arch for c in groups[group]})
        count = shards(len(groups[group]))
        for driver, on_compat in variants:
            label = (f"{group}-driver-{driver}" + ("+compat" if on_compat else "")) if gpu \
                else "cpu"
            runs_on = [*runner_base, label_prefix + group, f"{label_prefix}driver-{driver}"] \
                if gpu else ["ubuntu-latest"]
            for index in range(1, count + 1):
                shard_cells = groups[group][index - 1::count]
                identity = cache_identity(shard_cells)
                args = [*words_for("tier", tier), *words_for("archs", archs), *selection,
                        *words_for("shard", (index, count))]
                if not gpu:
                    args += words_for("gpu", False)
                if on_compat:
                    args += [*words_for("provider", "docker"),
                             *words_for("docker_flavour", "nvidia"),
                             *words_for("cuda_compat", True)]
                include.append({
                    "name": f"{label} {index}/{count}", "runs-on": runs_on, "label": label,
                    "args": " ".join(args), "artifact": f"results-{label}-{index}-of-{count}",
                    "cells": len(shard_cells), "cache": identity,
                    # One job saves each cache, the others restore it: no key is raced.
                    "save-cache": identity not in saving})
                saving.add(identity)
    return {"include": include}
