"""Naming the cause of a non-pass cell, from rules kept as data in ``rules.toml``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..common.tomlfile import tomllib
from ..stages.cell.result import StageResult
from ..stages.compile.logs import error_lines

if TYPE_CHECKING:
    from .results import CellResult

UNCLASSIFIED = "unclassified"
# What the rules read of a cell's output, whatever it printed: the decisive message's head
# and tail, the log's last characters, each line cut. The rules are linear in what they
# read (tests/unit/test_diagnosis_linear.py); these bound what that is, so a diagnosis in
# the run's own process takes milliseconds however much a stranger's cell printed.
DIAGNOSED_MESSAGE_CHARS = 16 << 10
DIAGNOSED_LOG_CHARS = 64 << 10
DIAGNOSED_LINE_CHARS = 4 << 10


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    title: str
    explanation: str
    fix: str
    links: tuple[str, ...]
    statuses: tuple[str, ...] = ()
    # Tried on the decisive message alone: its words also close logs it does not explain.
    decisive_only: bool = False
    # Applies only when the compile did (True) or did not (False) name a target arch: the
    # same words ("incomplete type") mean "no arch reached the preprocessor" without one
    # and "this type needs a newer arch" with one. None: either.
    arch_reached: bool | None = None
    # Read from a finding the failing stage recorded (its `detail` of that name, a table
    # whose "said" the pattern is matched against), not from what the compiler printed:
    # what the worker measured after the failure (since which arch a name is declared).
    detail: str = ""
    # A figure the rule reads from the stage's log where the decisive message has none
    # (NVRTC's bare NVRTC_ERROR_COMPILATION; ptxas's usage line has the bytes): a pattern
    # whose `value` group is the figure, the title said with it, and the figure it must be
    # above to be the cause (a usage line of 100 bytes explains no refusal over 48 KiB).
    figure: re.Pattern[str] | None = None
    figure_title: str = ""
    figure_above: int = 0
    # The one-line account of the cell (a CI log's line) says this rule's title before the
    # compiler's words: it is a finding the run measured (since which arch a name exists),
    # which says more than the compiler's "identifier ... is undefined".
    said_first: bool = False

    def fits(self, arch_reached: bool | None) -> bool:
        return self.arch_reached is None or self.arch_reached == arch_reached


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
def _table() -> dict[str, Any]:
    return tomllib.loads(resources.files("cudamatrix.record").joinpath("rules.toml").read_text())


@cache
def rules() -> tuple[Rule, ...]:
    return tuple(
        Rule(r["name"], re.compile(_with_tables(r["pattern"])), r["title"], r["explanation"],
             r["fix"],
             tuple(r.get("links", ())), tuple(r.get("status", ())),
             bool(r.get("decisive_only", False)), r.get("arch_reached"), r.get("detail", ""),
             re.compile(r["figure"]) if "figure" in r else None, r.get("figure_title", ""),
             int(r.get("figure_above", 0)), bool(r.get("said_first", False)))
        for r in _table()["rule"]
    )


@cache
def _rules_by_name() -> dict[str, Rule]:
    return {rule.name: rule for rule in rules()}


def intrinsic_archs() -> dict[str, str]:
    """The first arch whose device code the toolkit's headers give each intrinsic
    (rules.toml's table, measured with the compiler)."""
    return dict(_table().get("intrinsic_archs", {}))


def _with_tables(pattern: str) -> str:
    """A rule's pattern with {intrinsics} made every name of the intrinsic table, so a
    rule stays data: a new intrinsic is a line of the table."""
    names = "|".join(re.escape(n) for n in sorted(intrinsic_archs(), key=len, reverse=True))
    return pattern.replace("{intrinsics}", f"(?:{names})")


def option_releases() -> dict[str, str]:
    """The first CUDA release whose nvcc takes each option (rules.toml's table)."""
    return dict(_table().get("option_releases", {}))


def _arch_number(arch: str) -> str:
    """The value `__CUDA_ARCH__` has for an arch (sm_80: 800, sm_100: 1000), "N" for none."""
    digits = re.sub(r"\D", "", arch)
    return f"{digits}0" if digits else "N"


def _over(values: dict[str, str]) -> dict[str, str]:
    """How far a figure is past its limit ({over}), where the pattern caught both: a
    budget's diagnosis says by how much, not only that."""
    value, limit = values.get("value", ""), values.get("limit", "")
    if value.isdigit() and limit.isdigit():
        return {"over": str(int(value) - int(limit))}
    return {}


def _figure(rule: Rule, log: str) -> dict[str, str]:
    """The rule's figure read from the (already bounded) log: the largest its pattern
    finds, as the largest is the one past a limit (one kernel of several over 48 KiB), with
    the limit it is above ({limit}); {} where the rule reads none, the log has none or none
    is above the limit."""
    if rule.figure is None or not log:
        return {}
    largest = max((int(m.group("value")) for m in rule.figure.finditer(log)), default=-1)
    if largest <= rule.figure_above:
        return {}
    return {"value": str(largest), "limit": str(rule.figure_above)}


def _said(rule: Rule, found: re.Match[str], text: str,
          finding: dict[str, str] | None = None, log: str = "") -> Diagnosis:
    """The rule's diagnosis with the pattern's groups filled in ({arch}, {option}), the
    first release of a caught option ({first_release}), a figure's excess ({over}), each
    figure with its thousands marked ({value_said}: 49,168) and, for a `detail` rule, the
    finding's own sentence ({said}). A rule with a `figure` found in the log says its
    `figure_title`: the bytes the log has, where the message said none."""
    figure = _figure(rule, log)
    values = dict(finding or {})
    values.update({k: v for k, v in found.groupdict().items() if v is not None})
    values.update(figure)
    values.update(_over(values))
    values.update({f"{k}_said": f"{int(v):,}" for k, v in list(values.items())
                   if v.isdigit() and len(v) <= 18})
    if "intrinsic" in values:
        since = intrinsic_archs().get(values["intrinsic"], "")
        values["first_arch"] = since
        values["arch_number"] = _arch_number(since)
    if values.get("arch", "").startswith("sm_"):
        values.setdefault("arch_number", _arch_number(values["arch"]))
    if "option" in values:
        first = option_releases().get(values["option"])
        values["first_release"] = first or "N.N"
        values["first_release_said"] = (f"CUDA {first} was the first release whose nvcc has it"
                                        if first else "a later CUDA release may have it")

    def fill(words: str) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), words)

    title = rule.figure_title if figure and rule.figure_title else rule.title
    return Diagnosis(rule.name, fill(title), fill(rule.explanation), fill(rule.fix),
                     rule.links, text)


def _ends(text: str, keep: int) -> str:
    """`text` whole where it is short, else its head and tail (`keep` characters in all,
    a newline between): the error is said first, what the process printed last."""
    if len(text) <= keep:
        return text
    return f"{text[:keep // 2]}\n{text[len(text) - keep // 2:]}"


# Where a compiler's line says what it is about, before what it says: `path(12): `,
# `path:12:3: `. Read from the line's start alone (linear), over a path without spaces.
_LOCATION = re.compile(r"\A[^\s]*?(?:\(\d++\)|:\d++(?::\d++)?): ")
# A message that is a file's path and nothing more (`path(12)`, `path:12:`, `path(12): here`):
# what a cut, or a line that is only a place, leaves of a compiler's error.
# One word holding a slash, its line number and colon with it: read once, possessively.
_BARE_PATH = re.compile(r"\A\s*+(?=[^\s/\\]*+[/\\])[^\s]++(?: here)?\s*+\Z")


# A decisive message that says only which call failed and the status it returned: every
# word of it is the API's, none says why ("error: nvrtcCompileProgram returned
# NVRTC_ERROR_COMPILATION", "cuModuleLoadData: CUDA_ERROR_INVALID_SOURCE",
# "error: cudaErrorNoKernelImageForDevice (error code: 209)"). Read once, possessively.
_BARE_STATUS = re.compile(
    r"\A\s*+(?:error:\s*+)?(?:\w++(?:\(\))?+(?: returned|:)\s++)?"
    r"(?:[A-Z][A-Z0-9]*+_ERROR(?:_[A-Z0-9]++)*+|cudaError\w*+)"
    r"(?:\s*+\(error code: \d++\))?+\s*+\Z")


def said_beyond(message: str, diagnosis: Mapping[str, Any] | None) -> str:
    """What a one-line account of a failure (a CI log's line for its cell) adds to the
    decisive message: the diagnosis' title where the message is a bare status and a rule
    named the cause, "" otherwise. NVRTC over 48 KiB of static shared memory says only
    NVRTC_ERROR_COMPILATION; the rule knows why, and the log line said none of it. Where
    the compiler's own words say why, they are the line and the reports carry the rest."""
    if not diagnosis or diagnosis.get("rule") in (None, UNCLASSIFIED):
        return ""
    if not _BARE_STATUS.match(message[:DIAGNOSED_LINE_CHARS]):
        return ""
    return str(diagnosis.get("title") or "")


def said_first(diagnosis: Mapping[str, Any] | None) -> str:
    """What a one-line account of a failure says before the decisive message: the
    diagnosis' title where its rule is a finding the run measured (`said_first` in
    rules.toml: "dequant works from sm_80 on"), "" otherwise. The Markdown and the page
    said it; the CI line said only the compiler's "identifier ... is undefined"."""
    rule = _rules_by_name().get(str((diagnosis or {}).get("rule")))
    if rule is None or not rule.said_first:
        return ""
    return str((diagnosis or {}).get("title") or "")


def _said_alone(line: str) -> str:
    """A compiler's line without the place it starts with: the rules read what the error
    says, never the words of a path (a folder named after a case, an artifacts folder)."""
    return _LOCATION.sub("", line, count=1)


def decisive_message(message: str, lines: Sequence[str]) -> str:
    """The message a diagnosis reads and shows: the cell's own, unless it is only a file's
    path, then the first error line that says more (whatever the compiler printed first,
    the decisive words are an error's, never a bare path)."""
    if not _BARE_PATH.match(message):
        return message
    return next((line for line in lines
                 if line.strip() and not _BARE_PATH.match(line) and _said_alone(line).strip()),
                message)


def diagnose(message: str, lines: Sequence[str] = (),
             arch_reached: bool | None = None, log: str = "") -> Diagnosis:
    """The first rule that matches the decisive message, else one of the error lines.
    `arch_reached`: whether the compile named its target arch (None: not known); `log`:
    what the stage printed, where a rule's figure is read. Each is read within its bound
    (DIAGNOSED_*), never whole."""
    bounded = tuple(_ends(line, DIAGNOSED_LINE_CHARS) for line in lines)
    return _diagnose(decisive_message(_ends(message, DIAGNOSED_MESSAGE_CHARS), bounded),
                     bounded, arch_reached, log[-DIAGNOSED_LOG_CHARS:])


@lru_cache(maxsize=4096)
def _diagnose(message: str, lines: tuple[str, ...], arch_reached: bool | None,
              log: str = "") -> Diagnosis:
    # Remembered: the cells of a tier repeat a few messages over every toolkit and arch.
    for index, text in enumerate((message, *lines)):
        said = _said_alone(text)
        for rule in rules():
            if rule.detail or (rule.decisive_only and index > 0) \
                    or not rule.fits(arch_reached):
                continue
            found = rule.pattern.search(said) if said else None
            if found is not None:
                return _said(rule, found, text, log=log)
    return Diagnosis(UNCLASSIFIED, "No rule matched", evidence=message)


def diagnose_stage(message: str, stage: StageResult,
                   arch_reached: bool | None = None) -> Diagnosis:
    """A cell's diagnosis from its decisive message, the stage that decided it and whether
    the compile named its target arch.

    A stage that timed out or crashed is named by its status first: its output, cut
    short, may mention anything.
    """
    for rule in rules():
        if stage.status in rule.statuses:
            return Diagnosis(rule.name, rule.title, rule.explanation, rule.fix, rule.links,
                             _ends(message, DIAGNOSED_MESSAGE_CHARS))
    found = _from_details(stage.details, message)
    if found is not None:
        return found
    log = stage.log[-DIAGNOSED_LOG_CHARS:]
    return diagnose(message, _error_lines(log), arch_reached, log)


def _from_details(details: dict[str, Any], message: str) -> Diagnosis | None:
    """The first `detail` rule whose finding the stage recorded and whose pattern matches
    the finding's sentence ("said"): the finding is measured, so it names the cause more
    surely than the compiler's words do. The evidence stays the cell's message."""
    for rule in rules():
        finding = details.get(rule.detail) if rule.detail else None
        said = finding.get("said") if isinstance(finding, dict) else None
        if not isinstance(said, str):
            continue
        matched = rule.pattern.search(said[:DIAGNOSED_LINE_CHARS])
        if matched is not None:
            return _said(rule, matched, _ends(message, DIAGNOSED_MESSAGE_CHARS),
                         {"said": said[:DIAGNOSED_LINE_CHARS]})
    return None


@lru_cache(maxsize=256)
def _error_lines(log: str) -> tuple[str, ...]:
    return tuple(error_lines(log))


def unexplained(results: Iterable[CellResult]) -> list[str]:
    """The cells whose failure no rule explains, by id: said at the end of every report
    and run, so the rules grow from what real runs left unexplained (a skip's reason is
    the tool's own, never unexplained)."""
    return [result.cell.id for result in results
            if result.diagnosis and result.diagnosis.get("rule") == UNCLASSIFIED]


def unexplained_said(results: Iterable[CellResult], shown: int = 20) -> str:
    """The summary's line of the cells no rule explains (their count, the first `shown`
    ids), or "" where every failure has its rule."""
    ids = unexplained(results)
    if not ids:
        return ""
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    cells = "cell" if len(ids) == 1 else "cells"
    return (f"{len(ids)} failing {cells} no rule explains (rules.toml): "
            f"{', '.join(ids[:shown])}{more}")
