"""The arguments several commands share (a cell selection, a run's options, a baseline,
history): a run's flags are made from their declarations (config/run_flags.py), each value
checked as it is parsed, a bad one refused by name before any work."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..config.defaults import DEFAULT_HISTORY_RUNS as DEFAULT_RUNS
from ..config.flags import SECTIONS, Group, RunFlag, whole_number
from ..config.flags import positive_number as _positive_number
from ..config.run_flags import RUN_FLAGS, parsed_default
from ..record.verdict_rules import FAIL_ON


class ProviderChoices:
    """--provider's choices: "auto" and the provider registry's names, read only when a
    value is checked or the help printed (the registry imports every provider, which
    `cudamatrix --version` and a warm run's start should not wait for)."""

    def names(self) -> tuple[str, ...]:
        from ..providers.toolkits import toolkit_providers

        return ("auto", *toolkit_providers())

    def __contains__(self, value: object) -> bool:
        return value in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def refusing(read: Callable[[str], Any]) -> Callable[[str], Any]:
    """`read` as argparse's type: its ValueError's words become argparse's refusal."""
    def checked(text: str) -> Any:
        try:
            return read(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    checked.__name__ = getattr(read, "__name__", "value")
    return checked


positive_number = refusing(_positive_number)
_runs = refusing(whole_number(1, 10_000, " (this run and earlier ones)"))


def _add(parser: argparse.ArgumentParser | argparse._ArgumentGroup, flag: RunFlag,
         help: str | None = None) -> None:
    if flag.switch:
        parser.add_argument(*flag.flags, dest=flag.dest, action="store_true",
                            help=help or flag.shown_help)
        return
    extra: dict[str, Any] = {}
    if flag.field == "provider":
        # A metavar, so that argparse does not list the choices (importing every provider)
        # each time the parser is made; a value given is checked against them.
        extra["choices"] = ProviderChoices()
    elif flag.choices:
        extra["choices"] = flag.choices
    if flag.metavar:
        extra["metavar"] = flag.metavar
    parser.add_argument(*flag.flags, dest=flag.dest, type=refusing(flag.read or str),
                        action="append" if flag.repeated else "store",
                        default=parsed_default(flag), help=help or flag.shown_help, **extra)


def add_flags(parser: argparse.ArgumentParser, *groups: Group) -> None:
    """The declared flags of these groups, in their declared order, each under its
    section's heading in the help (in SECTIONS' order: a 127-line list of options was
    read by no one)."""
    wanted = [flag for flag in RUN_FLAGS if flag.group in groups]
    for section, title in SECTIONS.items():
        flags = [flag for flag in wanted if flag.heading == section]
        if flags:
            shown = parser.add_argument_group(title)
            for flag in flags:
                _add(shown, flag)


def add_flag(parser: argparse.ArgumentParser, name: str, help: str) -> None:
    """One declared flag, said in another command's words (`merge --corpus`: the cases that
    judge max_slowdown across shards): the same name, reading and default."""
    _add(parser, next(flag for flag in RUN_FLAGS if name in flag.flags), help)


def add_selection(parser: argparse.ArgumentParser) -> None:
    """Which cells: every command that selects them (list, plan, validate, run, bisect)."""
    add_flags(parser, "selection")


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """What a run takes: the selection, where it writes, how it runs its cells."""
    add_flags(run, "selection", "run")


def add_history(parser: argparse.ArgumentParser) -> None:
    history = parser.add_argument_group("history of earlier runs")
    history.add_argument("--history", type=Path, action="append", default=[], metavar="PATH",
                         help="earlier runs to keep beside this one (a history.json, a "
                              "results.json, or a folder with either; repeatable): the page "
                              "shows each cell's recent outcomes and where it flipped")
    history.add_argument("--history-runs", type=_runs, default=DEFAULT_RUNS, metavar="N",
                         help=f"how many runs history.json keeps (default {DEFAULT_RUNS})")


def add_baseline(parser: argparse.ArgumentParser) -> None:
    baseline = parser.add_argument_group("against a baseline")
    baseline.add_argument("--baseline", type=Path,
                          help="an earlier results.json: list new failures, fixes, flips and "
                               "added/removed cells, and fail only on new failures")
    baseline.add_argument("--fail-on", choices=FAIL_ON, default=None,
                          help="what makes the exit status 1: any failed or erred cell, only "
                               "new failures against --baseline, or never once the record is "
                               "written (a CI shard: the merge judges) (default: new with "
                               "--baseline, else any)")
    baseline.add_argument("--allow-new-failures", action="store_true",
                          help="the same as --fail-on never")
