"""`cudamatrix plan`: a tier's cells as CI jobs, each job a shard of cells on one runner: the
one labelled ``gpu``, or cudamatrix.toml's [runners] (``actions_matrix``); written for the
CI engine --ci names (``ci_engines``): GitHub Actions' job matrix (JSON), or GitLab's child
pipeline (YAML)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..common.log_line import json_text, say, say_lines
from ..config.run_flags import job_words
from ..errors import UserError
from .arguments import add_selection
from .ci_engines import ENGINES
from .command import Command, Invocation
from .selection import options_from


def _plan(args: argparse.Namespace, invocation: Invocation) -> int:
    from ..config.planning import make_plan
    from ..config.project import find_project
    from .actions_matrix import github_matrix

    engine = ENGINES[args.ci]
    if args.github_output and engine.name != "github":
        raise UserError(f"--github-output: GitHub Actions' output, not --ci {engine.name}'s")
    made = make_plan(options_from(args))
    # The plan's own narrowing (corpus folders, known bugs, cases, toolkits...: every flag
    # declared to travel with a job) narrows each job as it narrowed the plan.
    selection = job_words(vars(args))
    # Every cell a job reports, the ruled-out skips too (its --shard takes them).
    every = [*made.cells, *(c for c, _ in made.ruled_out)]
    matrix = github_matrix(every, made.tier.name, args.drivers or (),
                           args.cells_per_job, args.max_jobs, gpu=not args.cpu,
                           compat=args.compat, selection=selection,
                           runner_base=engine.runner_base if args.runner_labels is None
                           else args.runner_labels.split(),
                           label_prefix=args.label_prefix,
                           runners=find_project(Path.cwd()).runners)
    # One text for the engine (GitHub's JSON matrix on one line, GitLab's child pipeline),
    # printed a line at a time through the log's rule: a line the tool made is as made.
    say_lines(engine.render(matrix, made.tier.name))
    lost = [job for job in matrix["include"] if job.get("not-run")]
    if lost:  # said where a person reads it (stderr: the plan job's log)
        say(f"plan: {sum(j['cells'] for j in lost)} cells build without a GPU: "
            f"{lost[0]['not-run']}", stderr=True)
    if args.github_output:
        target = os.environ.get("GITHUB_OUTPUT")
        if not target:
            raise UserError("--github-output: $GITHUB_OUTPUT is not set")
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(f"{args.github_output}={json_text(matrix)}\n")
    return 0


def _arguments(plan: argparse.ArgumentParser) -> None:
    add_selection(plan)
    plan.add_argument("--driver", action="append", dest="drivers", default=None,
                      help="a driver label, repeatable: a job per driver, on the runners "
                           "standing for it (default: none, each runner's own driver)")
    plan.add_argument("--cells-per-job", type=int, default=40,
                      help="at most this many cells a job (more jobs where the matrix allows)")
    plan.add_argument("--ci", choices=sorted(ENGINES), default="github",
                      help="the CI engine the plan is written for: github (a job matrix, "
                           "JSON) or gitlab (a child pipeline, YAML, for trigger: include: "
                           "artifact)")
    plan.add_argument("--runner-labels", default=None, metavar="LABELS",
                      help="labels every GPU runner has, space separated (default: "
                           + "; ".join(f"{e.name}: {' '.join(e.runner_base) or 'none'}"
                                       for e in ENGINES.values()) + ")")
    plan.add_argument("--label-prefix", default="", metavar="PREFIX",
                      help="put before the default runner's gpu and driver-NAME labels")
    plan.add_argument("--max-jobs", type=int, default=256,
                      help="at most this many jobs (GitHub refuses a matrix of more than 256): "
                           "jobs take more cells to fit")
    plan.add_argument("--compat", action="store_true",
                      help="also run older drivers on NVIDIA's forward-compatibility libraries")
    plan.add_argument("--cpu", action="store_true",
                      help="plan for runners without a GPU (compile stages only)")
    plan.add_argument("--github-output", metavar="NAME",
                      help="also append NAME=<json> to $GITHUB_OUTPUT")


COMMAND = Command("plan", "a tier's CI jobs: GitHub Actions' matrix (JSON) or GitLab's child "
                  "pipeline", _arguments, _plan)
