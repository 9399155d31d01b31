"""The commit a run is made from, for history to name the run where a cell flipped."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path


def git_head(folder: Path | None = None) -> str:
    """The HEAD of the git work tree `folder` (the current one) is in; empty where there is
    none (no git, not a repository, git hangs)."""
    try:
        done = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=folder,
                              capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    head = done.stdout.strip()
    return head if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", head) else ""


def source_revision(folder: Path | None = None) -> str:
    """$GITHUB_SHA where Actions set it, else git's HEAD where `folder` is."""
    said = os.environ.get("GITHUB_SHA", "")
    if re.fullmatch(r"[0-9a-f]{40}", said):
        return said
    return git_head(folder)
