"""`cudamatrix audit`: its arguments; facts, predictions (and measurements on a GPU), then
the reports."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ...common.log_line import say
from ...errors import UserError
from ..arguments import add_baseline, add_flag, add_history
from ..command import Command
from ..publishing import publish_reports

if TYPE_CHECKING:
    from rich.console import Console


def _audit(args: argparse.Namespace, console: Console) -> int:
    """`cudamatrix audit`: facts, predictions (and measurements on a GPU), then the reports."""
    from ...common.up_to_date import InputLedger
    from ...config.matrix import load_matrix
    from ...config.options import default_cache
    from ...config.project import find_project
    from ...providers.sass_tools import SASS_TOOLS_LABEL, older_cuobjdumps, prepare_sass_tools
    from ...record.baseline import load_baseline
    from ...stages.binaries.facts import Cuobjdumps
    from .run import AuditOptions, run_audit

    baseline = load_baseline(args.baseline) if args.baseline else None
    matrix = load_matrix(args.matrix or find_project(Path.cwd()).matrix)
    cache = args.cache or default_cache()
    # The 13.5 wheel where pip works; else a toolkit's own (a GPU machine without network).
    # An audit records no run to answer from later: what it read is nobody's to watch.
    wheel = prepare_sass_tools(cache, InputLedger())
    newest = wheel or shutil.which("cuobjdump")
    if newest is None:
        raise UserError("audit needs cuobjdump: the nvidia-cuda-cuobjdump wheel could not be "
                        f"installed into {cache}/tools")
    # Older ones (Debian's CUDA packages) read what the newest cannot, made on first need.
    cuobjdump = Cuobjdumps(newest, SASS_TOOLS_LABEL if wheel else "cuobjdump",
                           lambda: older_cuobjdumps(matrix, cache, InputLedger()))
    options = AuditOptions(tuple(args.inputs), cache, tuple(args.gpu), tuple(args.driver),
                           tuple(args.expect_gpu), measure=not args.no_measure)
    info, results = run_audit(options, matrix, cuobjdump,
                              lambda text: say(text, console))
    return publish_reports(args, console, args.out, info, results, baseline)


def _arguments(audit: argparse.ArgumentParser) -> None:
    audit.add_argument("inputs", nargs="+", metavar="WHEEL|FOLDER|ELF|NAME==VERSION",
                       help="what to audit: a wheel, a folder of built libraries, one ELF "
                            "file, or a release on the package index")
    audit.add_argument("--out", type=Path, default=Path("bench/evidence/audit-latest"),
                       help="the folder the audit's reports are written to")
    add_flag(audit, "--matrix", "the matrix whose archs, drivers and PTX ISA table to use")
    audit.add_argument("--gpu", action="append", default=[], metavar="sm_XX",
                       help="GPU archs to predict for (default: the matrix's)")
    audit.add_argument("--driver", action="append", default=[],
                       help="driver labels, versions or branches (default: the matrix's labels)")
    audit.add_argument("--expect-gpu", action="append", default=[], metavar="sm_XX",
                       help="GPUs the artifacts must load on: any other that does not is xfail")
    audit.add_argument("--no-measure", action="store_true",
                       help="predict only, even on a GPU machine")
    add_flag(audit, "--cache", "where downloaded wheels and cuobjdump live")
    add_baseline(audit)
    add_history(audit)


COMMAND = Command("audit", "judge built wheels and libraries for the GPUs and drivers they load on",
                  _arguments, lambda args, invocation: _audit(args, invocation.console),
                  checks_out=True)
