"""Issue 70, point 4: COMPATIBILITY.md for every reader. Its symbols were coloured squares
and circles (under a deuteranopia simulation 🟥 and 🟫 were one, 🟢 and 🔵 differed by
colour only), three archs shared one table cell ("🟥❗🟥❗⚪"), and messages were cut at
about 100 characters mid-word."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from cudamatrix.record.results import load_results
from cudamatrix.reports.markdown import markdown_report, message_parts
from cudamatrix.reports.symbols import FLAKY_MARK, SYMBOLS, UNEXPECTED_MARK

REPO = Path(__file__).resolve().parents[2]
# The words of a character's Unicode name that say its colour, not its shape ("BLACK" and
# "WHITE" are filled and hollow there, but a strict reading takes them out too).
COLOURS = {"RED", "GREEN", "BLUE", "ORANGE", "PURPLE", "BROWN", "YELLOW", "BLACK", "WHITE"}


def _shape(symbol: str) -> str:
    """A symbol as a reader without colour sees it: its characters' Unicode names, colour
    words and presentation selectors left out."""
    names = [unicodedata.name(c) for c in symbol if unicodedata.category(c) != "Mn"
             and c != "\ufe0f"]
    return " + ".join(" ".join(w for w in name.split() if w not in COLOURS) for name in names)


def test_every_symbol_differs_from_every_other_by_shape() -> None:
    marks = [*SYMBOLS.values(), UNEXPECTED_MARK, FLAKY_MARK]
    shapes = [_shape(mark) for mark in marks]
    assert len(set(shapes)) == len(marks), dict(zip(marks, shapes, strict=True))


def test_each_table_cell_holds_one_symbol() -> None:
    info, cells = load_results(REPO / "reports" / "results.json")
    text = markdown_report(info, cells)
    grid = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in grid.splitlines() if line.startswith("|")][2:]
    assert rows
    glyphs = set(SYMBOLS.values())
    for row in rows:
        for cell in row.strip("|").split("|")[1:]:
            said = cell.strip().replace(UNEXPECTED_MARK, "").replace(FLAKY_MARK, "")
            assert said in glyphs or said == "", (cell, row)


def test_a_message_is_kept_whole_to_its_sentence_and_cut_only_at_a_word() -> None:
    error = ("CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available for execution on "
             "the device. The module holds sm_80 only; build for sm_90 or ship PTX.")
    head, rest = message_parts(error)
    assert head == ("CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available for "
                    "execution on the device.")
    assert rest == "The module holds sm_80 only; build for sm_90 or ship PTX."
    long = "word " * 100 + "end"
    head, rest = message_parts(long)
    assert head.endswith("word") and not head.endswith(" ") and len(head) <= 300
    assert (head + " " + rest).split() == long.split()
    assert message_parts("short") == ("short", "")
    assert not re.search(r"\w…", head)
