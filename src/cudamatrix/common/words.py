"""A text shortened to fit a place, at a word's end, its cut marked.

A report or a log line that must stay short (a summary line, a table cell, a terminal row)
once took the first N characters: "...the module is not na" said less than nothing, and a
cut left unmarked read as the whole. Here a text longer than its room ends at the last
word that fits, then " …"; a single word longer than the room is cut inside it, marked
the same. Whatever must be read whole (a diagnosis' fix) is never given to this.
"""

from __future__ import annotations

CUT_MARK = " …"


def shortened(text: str, limit: int) -> str:
    """`text` whole where it has at most `limit` characters, else its words that fit in
    `limit` with the mark, never ending inside a word that has a space after it."""
    if len(text) <= limit:
        return text
    room = max(1, limit - len(CUT_MARK))
    cut = text.rfind(" ", 0, room + 1)
    kept = text[:cut] if cut > 0 else text[:room]
    return kept.rstrip() + CUT_MARK
