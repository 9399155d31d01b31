"""Unknown keys in the tool's TOML files: refused, with the nearest valid name.

A misspelt key read as absent is the worst kind of error: ``chek = ...`` in a run
table made a GPU run pass with "no check declared", ``gird`` ran one block. Every
table of every file the tool reads (case, matrix, run, options) is checked here.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ..errors import UserError


def check_keys(where: str, table: Mapping[str, Any], known: Collection[str],
               fail: Callable[[str, str], UserError]) -> None:
    """Raise `fail(where, message)` for the first key of `table` not in `known`."""
    for key in table:
        if key in known:
            continue
        nearest = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
        hint = f"did you mean {nearest[0]!r}?" if nearest \
            else f"known: {', '.join(sorted(known))}"
        raise fail(where, f"unknown key {key!r} ({hint})")
