"""The first screen of every report: per case, one sentence saying where it works and where
not, then one grid with a symbol per cell.

Both come from what each cell really did (the stage it reached or failed at, and the
compiler's or driver's decisive message), never from its verdict alone: a maintainer asks
"where does my code work?" before "which expectations held?". The unexpected cells are
marked in both. A sentence names its cells by ranges over the case's own ordered toolkits
(with library, host compiler and runner where they vary) and archs, so that
"runs on 12.4–13.5 for sm_80–sm_120" reads at a glance and still says exactly which cells.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..common.versions import Arch
from ..common.words import shortened
from ..record.results import CellResult, RunInfo
from .glance import UNEXPECTED, happened, repro
from .labels import row_label
from .symbols import FLAKY_MARK, SYMBOLS, UNEXPECTED_MARK, VERBS

RANGE = "–"  # en dash: toolkit and arch names hold hyphens of their own
MESSAGE_LIMIT = 100


def css_class(what: str) -> str:
    """The page's class for what happened (``fails at load`` is ``h-fail-load``)."""
    return "h-" + what.replace("fails at ", "fail-")


def _rank(what: str) -> int:
    return list(VERBS).index(what) if what in VERBS else len(VERBS)


def legend(counts: dict[str, int] | None = None, flaky: bool = False) -> str:
    """The grid's symbols in words, each with its number of cells where `counts` (by what
    happened) is given, and the flaky mark where a cell has it: the report's one legend."""
    said = []
    for what, symbol in SYMBOLS.items():
        if counts is not None and not counts.get(what):
            continue
        said.append(f"{symbol} {VERBS[what]}" + (f" {counts[what]}" if counts else ""))
    return " · ".join(said) + f" · {UNEXPECTED_MARK} after a symbol: not what the case " \
        "expects (a failure it does not expect, or a pass where it expects a failure)" \
        + (f" · {FLAKY_MARK} flaky: its attempts disagreed" if flaky else "")


def natural_key(text: str) -> tuple[tuple[str | int, ...], str]:
    """A name as a reader counts it: cache1, cache2, cache10 (text sorts cache10 second).
    Digits compare by value and letters without case; the name itself breaks ties. Split
    parts alternate text and number from a text part, so two keys always compare."""
    parts = re.split(r"(\d+)", text.lower())
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def where_key(label: str) -> list[object]:
    """Row labels in toolkit order (11.8 before 12.4 before 13.0), then the rest by name."""
    toolkit, _, rest = label.partition(" · ")
    return [*(int(p) if p.isdigit() else -1 for p in toolkit.split(".")), rest]


def spans(chosen: Sequence[str], universe: Sequence[str]) -> str:
    """`chosen` as runs over the ordered `universe`: three or more neighbours become
    ``first–last``, the rest are listed."""
    index = {value: i for i, value in enumerate(universe)}
    ordered = sorted(set(chosen), key=index.__getitem__)
    runs: list[list[str]] = []
    for value in ordered:
        if runs and index[value] == index[runs[-1][-1]] + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    return ", ".join(f"{run[0]}{RANGE}{run[-1]}" if len(run) > 2 else ", ".join(run)
                     for run in runs)


@dataclass(frozen=True)
class Clause:
    """One thing that happened to a set of cells of one variant: every row in `where` x
    every arch in `archs`."""

    happened: str
    where: tuple[str, ...]
    archs: tuple[str, ...]
    message: str
    unexpected: int


@dataclass(frozen=True)
class VariantAnswer:
    """What one variant's cells did: `clauses` said where they are, then `rest` (its most
    common outcome, where that takes several clauses) said as "on the other N cells"."""

    variant: str
    clauses: tuple[Clause, ...]
    rest: Clause | None
    rest_cells: int

    def phrases(self, where: Sequence[str], archs: Sequence[str]) -> list[Phrase]:
        # Places that ended alike, in the same words, make one phrase.
        grouped: dict[tuple[str, str], list[Clause]] = defaultdict(list)
        for clause in self.clauses:
            grouped[(clause.happened, clause.message)].append(clause)
        said = []
        for (what, _), clauses in grouped.items():
            places = " and ".join(f"on {spans(c.where, where)} for {spans(c.archs, archs)}"
                                  for c in clauses)
            said.append(_phrase(what, places, clauses))
        if self.rest is not None:
            said.append(_phrase(self.rest.happened, f"on the other {self.rest_cells} cells",
                                [self.rest]))
        return said


@dataclass(frozen=True)
class Phrase:
    """What happened at some places, in words, and how many of those cells were not what the
    case expects (each report marks those its own way)."""

    text: str
    unexpected: int

    def marked(self) -> str:
        return self.text + (f" ({UNEXPECTED_MARK} {self.unexpected} unexpected)"
                            if self.unexpected else "")


def _phrase(what: str, places: str, clauses: Sequence[Clause]) -> Phrase:
    said = f"{VERBS.get(what, what)} {places}"
    message = next((c.message for c in clauses if c.message), "")
    # The decisive message says why it failed; a skip's reason is in the grid's cells.
    if message and what.startswith("fails"):
        said += f": {message}"
    return Phrase(said, sum(c.unexpected for c in clauses))


@dataclass(frozen=True)
class CaseAnswer:
    case: str
    where: tuple[str, ...]  # the case's rows, in order
    archs: tuple[str, ...]  # the case's archs, in order
    variants: tuple[VariantAnswer, ...]

    def parts(self) -> list[tuple[str, list[Phrase]]]:
        """(variant, what it did) per variant; the variant is empty where the case has one."""
        named = len(self.variants) > 1
        return [(v.variant if named else "", v.phrases(self.where, self.archs))
                for v in self.variants]

    def sentence(self) -> str:
        return " · ".join((f"`{variant}`: " if variant else "")
                          + "; ".join(p.marked() for p in phrases)
                          for variant, phrases in self.parts())


# A path in a message says where the tool's cache or checkout is, not what went wrong.
_PATH = re.compile(r"(?<![\w.])/(?:[^\s/:()'\"]+/)+(?=[^\s/:()'\"]+)")


def without_paths(text: str) -> str:
    """A message with each path cut to its file name."""
    return _PATH.sub("", text)


def said_message(result: CellResult) -> str:
    """A cell's decisive message as the first screen says it: paths cut, one line, bounded,
    ended at a word ("...CUDA_ERRO…" said nothing)."""
    return shortened(without_paths(" ".join((result.message or result.reason or "").split())),
                     MESSAGE_LIMIT)


def _clauses(rows: dict[str, list[CellResult]], what: str) -> list[Clause]:
    """Rows with the same archs make one clause: "on 12.4–13.5 for sm_80–sm_120"."""
    by_archs: dict[frozenset[str], list[str]] = defaultdict(list)
    for label, row in rows.items():
        by_archs[frozenset(r.cell.arch for r in row)].append(label)
    clauses = []
    for arch_set, labels in by_archs.items():
        members = [r for label in labels for r in rows[label]]
        clauses.append(Clause(
            happened=what, where=tuple(sorted(labels, key=where_key)),
            archs=tuple(sorted(arch_set, key=Arch.parse)),
            message=next((said_message(r) for r in members if said_message(r)), ""),
            unexpected=sum(r.outcome in UNEXPECTED for r in members)))
    return clauses


def _variant_answer(variant: str, cells: Sequence[CellResult], where: Sequence[str],
                    archs: Sequence[str]) -> VariantAnswer:
    # Cells group by what happened and, where the sentence quotes it (a failure), by the
    # message too: cells that failed in other words are said apart, each with its own.
    grouped: dict[tuple[str, str], dict[str, list[CellResult]]] = \
        defaultdict(lambda: defaultdict(list))
    for r in cells:
        what = happened(r)
        grouped[(what, said_message(r) if what.startswith("fails") else "")][
            row_label(r.cell)].append(r)
    clauses = [c for key in sorted(grouped, key=lambda k: (_rank(k[0]), k[1]))
               for c in _clauses(grouped[key], key[0])]
    clauses.sort(key=lambda c: (_rank(c.happened), where.index(c.where[0]),
                                archs.index(c.archs[0])))
    sizes = {key: sum(len(row) for row in rows.values()) for key, rows in grouped.items()}
    common = max(sizes, key=lambda key: (sizes[key], -_rank(key[0])))
    if len(grouped) > 1 and sum((c.happened, c.message if c.happened.startswith("fails")
                                 else "") == common for c in clauses) > 1:
        def in_common(c: Clause) -> bool:
            return (c.happened, c.message if c.happened.startswith("fails") else "") == common
        kept = tuple(c for c in clauses if not in_common(c))
        rest = Clause(common[0], (), (), next((c.message for c in clauses
                                               if in_common(c) and c.message), ""),
                      sum(c.unexpected for c in clauses if in_common(c)))
        return VariantAnswer(variant, kept, rest, sizes[common])
    return VariantAnswer(variant, tuple(clauses), None, 0)


def case_answers(results: Sequence[CellResult]) -> list[CaseAnswer]:
    """Per case (in the names' natural order), per variant (in the run's order), the
    clauses that together cover each of its cells exactly once."""
    by_case: dict[str, list[CellResult]] = defaultdict(list)
    for result in results:
        if result.cell.frontend != "audit":
            by_case[result.cell.case].append(result)
    answers = []
    for case, cells in sorted(by_case.items(), key=lambda item: natural_key(item[0])):
        where = tuple(sorted({row_label(r.cell) for r in cells}, key=where_key))
        archs = tuple(sorted({r.cell.arch for r in cells}, key=Arch.parse))
        variants: dict[str, list[CellResult]] = defaultdict(list)
        for r in cells:
            variants[r.cell.variant].append(r)
        answers.append(CaseAnswer(case, where, archs, tuple(
            _variant_answer(v, vc, where, archs) for v, vc in variants.items())))
    return answers


@dataclass(frozen=True)
class GridCell:
    symbol: str
    happened: str

    @property
    def css(self) -> str:
        return css_class(self.happened)

    unexpected: bool
    result: CellResult
    title: str  # what a hover says: the cell, what happened, its message and repro


@dataclass(frozen=True)
class GridRow:
    case: str
    variant: str
    extra: str  # the row's label beyond its toolkit (library, host compiler, runner)
    cells: tuple[GridCell | None, ...]

    @property
    def label(self) -> str:
        return " · ".join(p for p in (self.case, self.variant, self.extra) if p)


@dataclass(frozen=True)
class Grid:
    columns: tuple[tuple[str, str], ...]  # (toolkit, arch), toolkits in order
    rows: tuple[GridRow, ...]

    def toolkits(self) -> list[tuple[str, list[str]]]:
        """(toolkit, its archs) in column order, for a two-line header."""
        grouped: dict[str, list[str]] = {}
        for toolkit, arch in self.columns:
            grouped.setdefault(toolkit, []).append(arch)
        return list(grouped.items())


def grid_cell(result: CellResult, info: RunInfo) -> GridCell:
    what = happened(result)
    unexpected = result.outcome in UNEXPECTED
    title = f"{result.cell.id}: {what} ({result.outcome})"
    if said_message(result) and what not in ("runs", "loads", "builds"):
        title += f" — {said_message(result)}"
    if unexpected:
        title += f" — repro: {repro(result.cell, info)}"
    return GridCell(SYMBOLS.get(what, "?"), what, unexpected, result, title)


def answer_grid(results: Sequence[CellResult], info: RunInfo, audits: bool = False) -> Grid:
    """Rows: case · variant (· library, host compiler, runner where set), in the names'
    natural order (cache2 before cache10); columns: toolkit
    x arch, only the pairs some cell has. An audit's cells (a module on a driver and a GPU)
    are in it where `audits` is set: the page draws every cell."""
    built = [r for r in results if audits or r.cell.frontend != "audit"]
    columns = tuple(sorted({(r.cell.toolkit, r.cell.arch) for r in built},
                           key=lambda c: (where_key(c[0]), Arch.parse(c[1]))))
    position = {column: i for i, column in enumerate(columns)}
    rows: dict[tuple[str, str, str], list[GridCell | None]] = {}
    for r in built:
        extra = row_label(r.cell).partition(" · ")[2]
        row = rows.setdefault((r.cell.case, r.cell.variant, extra), [None] * len(columns))
        row[position[(r.cell.toolkit, r.cell.arch)]] = grid_cell(r, info)
    ordered = sorted(rows.items(), key=lambda item: tuple(map(natural_key, item[0])))
    return Grid(columns, tuple(GridRow(case, variant, extra, tuple(cells))
                               for (case, variant, extra), cells in ordered))
