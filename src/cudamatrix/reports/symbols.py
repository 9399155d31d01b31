"""How every report draws what a cell did and its outcome: the one table each reads (the
Markdown, the page and its script, the charts, the counts' words). Written once so that two
reports never say one cell in two vocabularies: the page drew ○ ● ✗ where the Markdown
drew ◌ ✔ ✘ for the same cells (issue 80). tests/unit/test_verdict_walk.py finds a symbol,
a colour or a word mapped to an outcome anywhere else.

What happened (runs, loads, builds, the stage it failed at, skipped) has a verb and a
symbol; each symbol a shape of its own, read without colour (coloured squares and circles
were one under a deuteranopia simulation: tests/unit/test_markdown_symbols.py), text
characters, not emoji, so the page needs no emoji font and GitHub renders the Markdown's.
An outcome has a colour, the letter the page's history strip is written in, the words
its count is said in, and its rank among the unexpected (worst first).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..record.outcomes import OUTCOMES, Outcome


@dataclass(frozen=True)
class Happening:
    """What a cell did, drawn: the words a sentence says it in, and its symbol."""

    verb: str
    symbol: str


# In the order a sentence tells them.
HAPPENINGS: dict[str, Happening] = {
    "runs": Happening("builds and runs", "✔"),
    "loads": Happening("builds and loads", "◐"),
    "builds": Happening("builds", "◌"),
    "fails at build": Happening("fails to build", "■"),
    "fails at compile": Happening("fails to compile", "✘"),
    "fails at inspect": Happening("fails its checks", "▲"),
    "fails at load": Happening("fails to load", "◆"),
    "fails at run": Happening("fails at run", "✹"),
    "skipped": Happening("is skipped", "⊘"),
}
VERBS: dict[str, str] = {what: drawn.verb for what, drawn in HAPPENINGS.items()}
SYMBOLS: dict[str, str] = {what: drawn.symbol for what, drawn in HAPPENINGS.items()}
UNEXPECTED_MARK = "❗"  # after a symbol: not what the case expects
FLAKY_MARK = "🔁"  # after a symbol: the cell's attempts (--retries) disagreed


@dataclass(frozen=True)
class OutcomeLook:
    """An outcome, drawn: its colour, its letter in the page's history strip, the words
    its count is said in (`{n}` the count), and its rank among the unexpected."""

    colour: str
    code: str
    counted: str
    rank: int = 3


# In the order the headline says their counts.
OUTCOME_LOOKS: dict[Outcome, OutcomeLook] = {
    "pass": OutcomeLook("#2da44e", "p", "{n} as expected"),
    "xfail": OutcomeLook("#d4a72c", "x", "{n} expected failures"),
    "skip": OutcomeLook("#8c959f", "s", "{n} skipped"),
    "fail": OutcomeLook("#cf222e", "f", "{n} failed", 0),
    "error": OutcomeLook("#8250df", "e", "{n} errors", 1),
    "xpass": OutcomeLook("#bf3989", "X", "{n} passed where a failure was expected", 2),
}
ABSENT_COLOUR = "#d0d7de"  # a cell a kept run did not have
# The colour of each outcome, and of a cell that is absent (the charts' scale).
OUTCOME_COLOURS: dict[str, str] = {
    **{outcome: OUTCOME_LOOKS[outcome].colour for outcome in OUTCOMES}, "absent": ABSENT_COLOUR}
# A cell's outcome in each kept run, one letter a run ("-": the run had no such cell).
HISTORY_CODES: dict[str, str] = {
    **{outcome: OUTCOME_LOOKS[outcome].code for outcome in OUTCOMES}, "": "-"}


def counted(outcome: Outcome, count: int) -> str:
    """The words `count` cells of `outcome` are said in ("3 failed")."""
    return OUTCOME_LOOKS[outcome].counted.format(n=count)


def unexpected_rank(outcome: Outcome) -> int:
    """Where an outcome stands among the cells not as their case expects, worst first."""
    return OUTCOME_LOOKS[outcome].rank
