"""`cudamatrix init`: a starter cudamatrix.toml and two example cases in a folder, and with
--ci the CI's file: a workflow calling the reusable one (github), the compile-only one for
GitHub-hosted runners (github with --no-gpu), or a `.gitlab-ci.yml` whose plan job feeds a
child pipeline (gitlab)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..common.log_line import say
from ..config.defaults import CONFIG, STARTER_CASES
from .command import Command, Invocation


def _init(args: argparse.Namespace, invocation: Invocation) -> int:
    from ..config.project import init_project

    written = init_project(args.folder, args.ci, args.workflow, args.no_gpu)
    say("wrote " + ", ".join(str(p) for p in written), invocation.console)
    if Path(CONFIG) not in written:  # --ci in a project that has one: the CI file alone
        say(f"{CONFIG} was there already: it and the cases are as they were; only the CI "
            "file was written", invocation.console)
        return 0
    say(f"next: edit {CONFIG} (tiers: toolkits and archs you support), put your kernels in "
        f"{STARTER_CASES}/ (one folder per case, see the two examples), then `cudamatrix run`",
        invocation.console)
    return 0


def _arguments(init: argparse.ArgumentParser) -> None:
    init.add_argument("folder", type=Path, nargs="?", default=Path("."),
                      help=f"the project's folder, where {CONFIG} and {STARTER_CASES}/ go")
    init.add_argument("--ci", choices=("github", "gitlab"),
                      help="also write what runs the matrix in that CI (github: a caller of "
                           "cudamatrix's reusable workflow; gitlab: a .gitlab-ci.yml planning "
                           "a child pipeline), pinned to this release")
    init.add_argument("--no-gpu", action="store_true",
                      help="with --ci github: write .github/workflows/cudamatrix-compile.yml "
                           "instead, the matrix compiled and audited on GitHub-hosted "
                           "runners (no GPU runner needed; beside the GPU workflow if "
                           "that is there)")
    init.add_argument("--workflow", metavar="OWNER/REPO/.github/workflows/cudamatrix.yml@REF",
                      help="with --ci github: the reusable workflow the caller uses "
                           "(default: this release's)")


COMMAND = Command("init", f"write a starter {CONFIG} and two example cases into the current "
                  "folder", _arguments, _init)
