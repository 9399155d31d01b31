"""Naming the cause of a non-pass cell, from rules kept as data in ``rules.toml``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import Any

from .tomlfile import tomllib

UNCLASSIFIED = "unclassified"


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    title: str
    explanation: str
    fix: str
    links: tuple[str, ...]


@dataclass(frozen=True)
class Diagnosis:
    rule: str
    title: str
    explanation: str = ""
    fix: str = ""
    links: tuple[str, ...] = ()
    evidence: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@cache
def rules() -> tuple[Rule, ...]:
    text = resources.files("cudamatrix").joinpath("rules.toml").read_text()
    return tuple(
        Rule(r["name"], re.compile(r["pattern"]), r["title"], r["explanation"], r["fix"],
             tuple(r.get("links", ())))
        for r in tomllib.loads(text)["rule"]
    )


def diagnose(message: str, lines: Sequence[str] = ()) -> Diagnosis:
    """The first rule that matches the decisive message, else one of the error lines."""
    for text in (message, *lines):
        for rule in rules():
            if text and rule.pattern.search(text):
                return Diagnosis(rule.name, rule.title, rule.explanation, rule.fix, rule.links,
                                 text)
    return Diagnosis(UNCLASSIFIED, "No rule matched", evidence=message)
