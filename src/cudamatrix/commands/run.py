"""`cudamatrix run`: the matrix run, or the last run's results where nothing it read has
changed (up_to_date), then every report."""

from __future__ import annotations

import argparse
import json
import os
import signal
from collections.abc import Mapping
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.interruption import interrupt
from ..common.log_line import say, say_lines
from ..config.options import RunOptions
from .arguments import add_baseline, add_history, add_run_arguments
from .command import Command
from .publishing import fail_on_of, publish_reports
from .selection import run_options

if TYPE_CHECKING:
    from rich.console import Console

    from ..common.up_to_date import InputLedger
    from ..orchestrator.gpu import DeviceInfo


def _interrupt(signum: int, frame: object) -> None:
    interrupt()  # first: a preparation that ends from now on is the interrupt's, not a failure
    raise KeyboardInterrupt


def _run(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from ..common.up_to_date import (
        InputLedger,
        record_refusals,
        record_run,
        refusals,
        standing_record,
    )
    from ..orchestrator.gpu import run_device
    from ..orchestrator.progress import Progress as PlainProgress
    from .progress_bar import RichProgress

    options = run_options(args)
    interactive = console.is_terminal and not os.environ.get("CI")
    # A cancelled CI job gets SIGTERM, a closed terminal SIGHUP: stop as on Ctrl-C, keeping
    # every finished cell (and stopping the run's preparations, common/interruption.py).
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    # A shell starts background jobs with SIGINT ignored, and Python then leaves it so:
    # Ctrl-C (or a runner's SIGINT) must still stop the run and keep what it finished.
    signal.signal(signal.SIGINT, _interrupt)
    # Probed once: the record's command holds its answer, and the run uses it.
    device = run_device(options.gpu)
    command = _run_command(args, options, device)
    if not args.always_run:
        record, changed = standing_record(options.out, command)
        if record is not None:
            say(f"up to date: nothing the run into {options.out} (finished "
                f"{record.finished}) read has changed; its {record.cells} cells stand "
                "(--always-run runs them again)", console)
            say_lines(record.said, console)  # a line at a time: a damaged record's too
            return record.status
        if changed:
            say(f"running: {changed} since the last run into {options.out}", console)
        elif refused := refusals(options.out):
            more = f" and {len(refused) - 1} more" if len(refused) > 1 else ""
            say(f"running: the last run into {options.out} cannot stand for this one "
                f"({refused[0]}{more})", console)
    from ..orchestrator.runner import run_plan
    from ..record.baseline import load_baseline
    from ..record.verdict import settled
    from ..record.verdict_rules import environment_fails_run

    verbosity = getattr(args, "verbosity", 0)
    progress = RichProgress(console) if interactive and verbosity == 0 else PlainProgress()
    progress.verbosity = verbosity
    # A malformed baseline or history is found now, not after the whole run.
    baseline = load_baseline(args.baseline) if args.baseline else None
    progress.settle = lambda result: settled(result, baseline)
    if args.history:
        from datetime import datetime

        from ..record.history import check_history

        check_history(args.history, datetime.now(UTC).isoformat(timespec="seconds"))
    ledger = InputLedger()  # what this run reads, handed to everything that reads
    try:
        info, results, cases = run_plan(options, progress, device=device, ledger=ledger)
    except KeyboardInterrupt:
        say(f"interrupted: finished cells are kept in {options.out}/cells; continue with "
            "--resume", console)
        return 130
    console.begin_capture()
    try:
        code = publish_reports(args, console, options.out, info, results, baseline, cases)
    finally:
        said = console.end_capture()
        say_lines(said, console)
    for name, reason in info.environment_errors.items():
        say(f"error: {name} could not be prepared; its cells are marked error: {reason}",
            errors)
    unrecorded = _unrecorded(options, ledger, info.environment_errors)
    if not unrecorded:
        _watch_run_inputs(args, options, ledger)
        record_run(options.out, command, ledger.inputs(), code, said, info.finished,
                   len(results))
    else:
        record_refusals(options.out, unrecorded)
    if info.environment_errors and environment_fails_run(fail_on_of(args)):
        return 2  # a shard's (--fail-on never) are error cells the merge judges
    return code


def _run_command(args: argparse.Namespace, options: RunOptions, device: DeviceInfo
                 ) -> dict[str, str]:
    """The run's command by part (see up_to_date): its arguments as parsed, the options
    they made, the GPU as the probe found it, the commit."""
    from ..common.revision import source_revision
    from ..common.up_to_date import command_parts

    arguments = {k: str(v) for k, v in sorted(vars(args).items()) if k != "always_run"}
    return command_parts(json.dumps(arguments), repr(options), device.to_dict(),
                         source_revision())


def _unrecorded(options: RunOptions, ledger: InputLedger,
                environment_errors: Mapping[str, str]) -> list[str]:
    """Why a re-run of this run must ask its compilers, driver or kernels again. An
    environment that could not be prepared (an index down, a pin, a full disk) is never up
    to date, whatever --fail-on says: its error cells say nothing about the inputs, and the
    next run must try it again once the cause is fixed."""
    reasons = [f"{name} could not be prepared" for name in sorted(environment_errors)]
    reasons += ledger.refusals
    if options.prebuilt:
        reasons.append("--prebuilt: the builds are another run's")
    if not options.compile_cache:
        reasons.append("--no-compile-cache")
    return reasons


def _watch_run_inputs(args: argparse.Namespace, options: RunOptions, ledger: InputLedger
                      ) -> None:
    """What the run read besides what its cells named on the way (up_to_date's list)."""
    from ..common.up_to_date import CONTENT, DOCKER_SOCKET, NAMES, loaded_module_files
    from ..config.project import find_project

    ledger.watch(Path(__file__).resolve().parents[1], CONTENT)  # the cudamatrix package
    for module_file in loaded_module_files():
        ledger.watch(module_file, CONTENT)
    for folder in options.corpus:
        ledger.watch(folder)
    ledger.watch(options.matrix, 0)
    project = find_project(Path.cwd()).config
    for file in (project, args.baseline, *getattr(args, "history", [])):
        if file is not None:
            ledger.watch(file, 0)
    for on_path in os.environ.get("PATH", "").split(os.pathsep):
        if on_path:
            ledger.watch(on_path, NAMES)  # a program installed or removed there
    ledger.watch(DOCKER_SOCKET, 0)  # whether --provider auto would find an engine
    # The environments the cells used were watched by their markers as they were prepared;
    # the rest of the cache is not an input: other toolkits, other runs' installs, and the
    # compile cache, whose entries are what their keys say (one added or removed changes
    # no verdict this run made).


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(parser)
    add_baseline(parser)
    add_history(parser)


COMMAND = Command("run", "run the matrix and write the reports", _arguments,
                  lambda args, invocation: _run(args, invocation.console,
                                                     invocation.errors))
