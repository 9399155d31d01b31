"""What each artifact check reads, and the patterns that could never tell anything there.

``in = "ptx"`` reads the PTX; ``in = "sass"`` and ``in = "cubin"`` the cubin's machine
code as ``cuobjdump -sass`` prints it (a person who says "the cubin lacks STL" means its
instructions); ``in = "strings"`` the printable runs of the cubin's bytes, as
``strings`` prints them (an assert's message, a printf format). Searching a cubin's raw
bytes for ``STL|LDL`` once passed whatever ptxas did: a check that cannot fail. So a
pattern that matches every text (it matches the empty string) or no text of its kind
(it needs a character that text never holds) is refused when the case is read.
"""

from __future__ import annotations

import importlib
import re
from typing import Any


def _re_module(name: str) -> Any:
    """The parser the re module itself uses (re._parser; sre_parse before Python 3.11)."""
    try:
        return importlib.import_module(f"re._{name}")
    except ImportError:
        return importlib.import_module(f"sre_{name}")


sre_parse, sre = _re_module("parser"), _re_module("constants")

# Each kind: what it is, for messages.
ARTIFACT_KINDS = {
    "ptx": "the PTX text",
    "sass": "the machine code as cuobjdump -sass prints it",
    "cubin": "the cubin's machine code as cuobjdump -sass prints it",
    "strings": "the printable strings the cubin embeds",
}
_PRINTABLE = frozenset(map(chr, range(0x20, 0x7F))) | {"\t", "\n"}
# The characters a kind's text can hold; PTX is left open (a source file's name in a
# .file directive may be any text).
_ALPHABETS: dict[str, frozenset[str]] = {"sass": _PRINTABLE, "cubin": _PRINTABLE,
                                         "strings": _PRINTABLE}
_CATEGORIES = {sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D",
               sre.CATEGORY_SPACE: r"\s", sre.CATEGORY_NOT_SPACE: r"\S",
               sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W"}


def cubin_strings(data: bytes, shortest: int = 4) -> str:
    """The printable runs of a cubin's bytes, one a line, as ``strings`` prints them."""
    return "\n".join(m.decode("ascii") for m in
                     re.findall(rb"[\x20-\x7e\t]{%d,}" % shortest, data))


def _variants(char: str, icase: bool) -> set[str]:
    return {char, char.lower(), char.upper()} if icase else {char}


def _in_set(items: list[Any], char: str, icase: bool) -> bool:
    negate, hit = False, False
    for op, value in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            hit |= chr(value) in _variants(char, icase)
        elif op is sre.RANGE:
            hit |= any(value[0] <= ord(c) <= value[1] for c in _variants(char, icase))
        elif op is sre.CATEGORY:
            category = _CATEGORIES.get(value)
            hit |= category is None or re.fullmatch(category, char) is not None
        else:
            return True  # an item this reading does not know: assume it can match
    return hit != negate


def _reachable(items: Any, alphabet: frozenset[str], icase: bool) -> bool:
    """Whether this piece of a parsed pattern can match some text over `alphabet`. Where
    unsure (look-arounds, back-references, what it does not know) it says yes: a check is
    refused only when it truly can never match."""
    for op, value in items:
        if op is sre.LITERAL:
            ok = bool(_variants(chr(value), icase) & alphabet)
        elif op is sre.NOT_LITERAL:
            ok = any(c != chr(value) for c in alphabet)
        elif op is sre.IN:
            ok = any(_in_set(value, c, icase) for c in alphabet)
        elif op is sre.BRANCH:
            ok = any(_reachable(branch, alphabet, icase) for branch in value[1])
        elif op is sre.SUBPATTERN:
            ok = _reachable(value[3], alphabet, icase or bool(value[1] & sre.SRE_FLAG_IGNORECASE))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT) or op.name == "POSSESSIVE_REPEAT":
            ok = value[0] == 0 or _reachable(value[2], alphabet, icase)
        elif op.name == "ATOMIC_GROUP":
            ok = _reachable(value, alphabet, icase)
        else:  # ANY, anchors, look-arounds, back-references: no character of their own
            ok = True
        if not ok:
            return False
    return True


def never_tells(kind: str, pattern: str) -> str | None:
    """Why a check of `kind` with `pattern` could never fail (or never pass), or None."""
    if re.search(pattern, "") is not None:
        return (f"/{pattern}/ matches the empty string, so it is found in any text: "
                "'contains' could never fail and 'lacks' never pass")
    alphabet = _ALPHABETS.get(kind)
    if alphabet is None:
        return None
    parsed = sre_parse.parse(pattern)
    icase = bool(parsed.state.flags & sre.SRE_FLAG_IGNORECASE)
    if not _reachable(list(parsed), alphabet, icase):
        return (f"/{pattern}/ can never match {ARTIFACT_KINDS[kind]}: it needs a character "
                "that text never holds (it is printable ASCII, tabs and newlines)")
    return None
