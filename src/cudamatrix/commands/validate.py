"""`cudamatrix validate`: the matrix and the corpus checked, nothing run."""

from __future__ import annotations

import argparse

from .arguments import add_selection
from .command import Command, Invocation
from .selection import options_from


def _validate(args: argparse.Namespace, invocation: Invocation) -> int:
    from ..config.planning import make_plan

    options = options_from(args)
    plan = make_plan(options)
    # The user's own file where there is one (the matrix under it is the tool's, unless
    # it names another), else the matrix read.
    checked = options.overrides_file or plan.matrix.path
    for idle in plan.idle_variants:
        invocation.console.print(f"warning: variant {idle} has no cell in tier "
                                 f"{plan.tier.name} (its `only`, or the tier's toolkits, archs "
                                 "and libraries, leave none): it never runs", markup=False)
    invocation.console.print(f"{checked}: ok; {len(plan.cases)} cases, "
                             f"{len(plan.cells)} cells in tier {plan.tier.name}"
                             + (f" (and {len(plan.ruled_out)} the matrix rules out, each a "
                                "skip)" if plan.ruled_out else ""))
    return 0


COMMAND = Command("validate", "check the matrix and the corpus", add_selection, _validate)
