"""What a flag of a run is (`RunFlag`) and how its words are read: declared on the
`RunOptions` field it sets (config/options.py, as nox's and attrs' options carry their flag
with their field), or in config/run_flags.py for the few no field holds."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..common.versions import HOST_COMPILER
from ..errors import UserError

# Which commands take a flag: every command that selects cells, or only those that run them.
Group = Literal["selection", "run"]
# Where a command's help lists a flag, by what a user is deciding (`run --help` was one list
# of 127 lines): each section's heading, in the order the help shows them.
Section = Literal["cells", "toolkits", "running", "compiles", "output"]
SECTIONS: dict[Section, str] = {
    "cells": "which cells",
    "toolkits": "toolkits and libraries",
    "running": "how the cells run",
    "compiles": "compiles and their caches",
    "output": "where the results go",
}


def positive_number(text: str) -> float:
    """A positive, finite number (seconds, GiB): nan, inf and 0 are refused by name."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be a positive finite number, got {text!r}")
    return value


def whole_number(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """A reader of a whole number from `low` to `high` (`why`: what the bounds mean)."""
    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise ValueError(f"must be {low} to {high}{why}, got {text!r}")
        return value
    read.__name__ = f"whole number {low} to {high}"
    return read


def host_compiler(text: str) -> str:
    """A host compiler program name (g++-11, clang++-19), refused by name otherwise."""
    if not HOST_COMPILER.fullmatch(text):
        raise ValueError(f"{text!r} is not a host compiler program (g++, g++-12, clang++-19)")
    return text


def shard(text: str) -> tuple[int, int]:
    """i/n: the i-th of n shards, 1-based."""
    try:
        index, count = (int(p) for p in text.split("/"))
    except ValueError:
        raise ValueError(f"expected i/n, got {text!r}") from None
    return index, count  # 1 <= i <= n is the plan's to check (config/plan.shard)


def library_pin(text: str) -> tuple[str, str]:
    """NAME==VERSION: one release of a matrix library."""
    name, equals, version = text.partition("==")
    if not equals or not name or not version:
        raise ValueError(f"{text!r}: give NAME==VERSION (cutlass==3.7.0)")
    return name, version


def pins(given: Sequence[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    versions: dict[str, tuple[str, ...]] = {}
    for name, version in given:
        versions[name] = (*versions.get(name, ()), version)
    return versions


def unpin(versions: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    return [(name, version) for name, chosen in versions.items() for version in chosen]


@dataclass(frozen=True)
class RunFlag:
    """One option of a run. `field`: the `RunOptions` field it sets, filled in from the field the
    flag is declared on (None: the command reads it itself, or with the project: --corpus
    and --known-bugs join cudamatrix.toml's cases). `read`: one word to a value (ValueError
    names what is wrong), None for a switch, which sets the field to `sets`. A repeated
    flag's values become the field by `collect`, and the field's value becomes the flag's
    values again by `spread`. `job`: a plan's jobs carry the flag as the plan was given it;
    `repro`: a cell's repro carries it wherever the run's value is not the default.
    `default_said`: the default in words where it depends on the machine (its cores, an
    environment variable): the parser then holds nothing where the flag is not given, and
    `RunOptions` makes the default as the run starts. `environment`: the variable whose
    value is the default where the flag is not given, named here only (the field reads it,
    the help and the reference say it), read as the flag's own words are (a repeated
    flag's values joined by os.pathsep). `section`: the heading the help lists it under (a
    selection's flags: which cells; a run's: how the cells run, unless it says another)."""

    flags: tuple[str, ...]
    help: str
    group: Group
    field: str | None = None
    read: Callable[[str], Any] | None = None
    sets: Any = True
    repeated: bool = False
    collect: Callable[[list[Any]], Any] = tuple
    spread: Callable[[Any], Iterable[Any]] = iter
    spell: Callable[[Any], str] = str
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    job: bool = False
    repro: bool = False
    # Why a cell's repro leaves the flag out, where it does: a flag that changes what a
    # cell does must be in its repro, so one that is not says why (a selection's flags:
    # the repro names its one cell with --cell). tests/unit/test_run_flags.py holds each
    # flag to one of the two.
    not_in_repro: str = ""
    default_said: str = ""
    environment: str = ""
    section: Section | None = None

    @property
    def default_words(self) -> str:
        """The default in words where the machine or the environment decides it ("" where
        the declared value is the default)."""
        if not self.environment:
            return self.default_said
        joined = f", values joined by {os.pathsep!r}" if self.repeated else ""
        otherwise = f", else {self.default_said}" if self.default_said else ""
        return f"${self.environment}{joined}{otherwise}"

    @property
    def shown_help(self) -> str:
        """The help a parser shows: the declared words, and the variable that sets it."""
        return f"{self.help} (default: {self.default_words})" if self.environment \
            else self.help

    def environment_default(self, environment: Mapping[str, str],
                            otherwise: Callable[[], Any]) -> Any:
        """The field's default: the variable's value read as the flag's words are, else
        `otherwise()`; a value the flag would refuse is refused naming the variable."""
        text = environment.get(self.environment, "") if self.environment else ""
        if not text:
            return otherwise()
        words = [w for w in text.split(os.pathsep) if w] if self.repeated else [text]
        try:
            values = [self.read(word) if self.read else word for word in words]
        except ValueError as exc:
            raise UserError(f"${self.environment} ({self.name}'s default): {exc}") from None
        return self.collect(values) if self.repeated else values[0]

    @property
    def why_not_in_repro(self) -> str:
        """Why a cell's repro leaves the flag out ("" where it carries it)."""
        if self.repro:
            return ""
        return self.not_in_repro or ("a repro names its one cell with --cell"
                                     if self.group == "selection" else "")

    @property
    def heading(self) -> Section:
        """The section the help lists the flag under."""
        return self.section or ("cells" if self.group == "selection" else "running")

    @property
    def name(self) -> str:
        """The flag as a user types it (--cell-timeout)."""
        return self.flags[0]

    @property
    def dest(self) -> str:
        """Where argparse keeps its value (cell_timeout)."""
        return self.name.lstrip("-").replace("-", "_")

    @property
    def switch(self) -> bool:
        return self.read is None

    def value(self, given: Any) -> tuple[bool, Any]:
        """(whether it was given, the field's value) from what argparse holds."""
        if self.switch:
            return bool(given), self.sets
        if self.repeated:
            return bool(given), self.collect(list(given or ()))
        return given is not None, given

    def refusal(self, value: Any) -> str | None:
        """Why `value` cannot be the field's, or None: each of its words, written as
        `words` writes them and read back by `read` (whose ValueError names what is
        wrong), must be a choice where there are choices and give the value itself back,
        so that a value made in code (a `RunOptions(...)`, a benchmark's) is held to what
        the command line accepts (a retries=-1, an order nothing knows, a "4" for a number
        all read back as something else or not at all)."""
        if self.switch:
            return None if isinstance(value, bool) else f"{value!r} is not true or false"
        try:
            items = list(self.spread(value)) if self.repeated else [value]
            back = [self.read(self.spell(item)) if self.read else item for item in items]
        except ValueError as exc:
            return str(exc)
        except (TypeError, AttributeError, IndexError):
            return f"{value!r} is not a value {self.name} gives"
        for item in back:
            if self.choices is not None and item not in self.choices:
                return f"{item!r} is not one of {', '.join(self.choices)}"
        again = self.collect(back) if self.repeated else back[0]
        same_type = type(again) is type(value) or (
            isinstance(again, float) and isinstance(value, int) and not isinstance(value, bool))
        if not same_type:
            return (f"{value!r} is of type {type(value).__name__}, where {self.name} gives "
                    f"{type(again).__name__}")
        if again != value:
            return f"{value!r} reads back from {self.name}'s words as {again!r}"
        return None

    def words(self, value: Any, where: Callable[[Path], str] = str) -> list[str]:
        """The flag's words that give the field `value` (paths written by `where`)."""
        if self.switch:
            return [self.name] if value == self.sets else []

        def spelled(item: Any) -> str:
            return where(item) if isinstance(item, Path) else self.spell(item)

        items = list(self.spread(value)) if self.repeated else [value]
        return [word for item in items for word in (self.name, spelled(item))]
