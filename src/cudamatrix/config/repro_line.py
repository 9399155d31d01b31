"""The one command line that runs one cell again, wherever the tool prints it (the
Markdown, the page's panel, the first screen's hover, bisect's lines): pasted into a shell
at the project's root, it must neither replace the run's own report nor answer from what
the run left behind. A report's repro once had no --out (run, it replaced the user's
10-cell reports/latest with a 1-cell report), was answered from the compile cache
(`fail (0.0s)`, nothing compiled) and named the CI machine's folders
(`--corpus /home/runner/...`)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from .plan import cell_slug
from .run_flags import RUN_FLAGS, named_from, words_for

# Where repros write, from the project's root: a folder per cell, beside the run's own
# reports/latest, which a repro leaves as it was.
REPRO_REPORTS = Path("reports/repro")

# The flags whose value is a path: named from the project's root, and a `~/` of theirs
# (named_from: a folder under the home of the machine that ran) left for the shell.
PATH_FLAGS = frozenset(name for flag in RUN_FLAGS if flag.read is Path for name in flag.flags)


def repro_out(cell_id: str) -> Path:
    """The repro's own --out: one folder per cell (its file name, config/plan.cell_slug, so
    a case id from a stranger names no folder outside it), so two cells' repros never
    replace each other's report either."""
    return REPRO_REPORTS / cell_slug(cell_id)


def _path_word(word: str, root: str) -> str:
    """A path value, quoted: one a record named absolute inside its project's root (a run
    recorded before its paths were named from there, a merge of such shards) made relative
    to it; one named from `~` keeps the `~` unquoted, the one thing a shell is to expand."""
    if root and Path(word).is_absolute():
        word = named_from(Path(word), Path(root), None)
    if word == "~" or word.startswith("~/"):
        return "~" + (f"/{shlex.quote(word[2:])}" if word[2:] else word[1:])
    return shlex.quote(word)


def repro_line(run_words: Sequence[str], cell_id: str, root: str = "") -> str:
    """`cudamatrix run` of the one cell `cell_id` as the run ran it, to be run from the
    project's root (`root`, the folder the record names, where the run's words were made:
    an absolute path recorded inside it is named relative to it): the run's words that
    decided the cell (`run_words`: its corpus, tier, options, provider, the cell's toolkit,
    arch, library and host compiler), then the words every repro has whatever the run had:
    a report folder of its own (`repro_out`) and a compile afresh (--no-compile-cache,
    which the compile cache neither answers nor is filled by, and which no earlier run into
    that folder stands for: commands/run.py never records one as up to date), then the
    cell. Every word is quoted for a POSIX shell: case ids and tiers come from strangers."""
    words = [*run_words, *words_for("out", repro_out(cell_id)),
             *words_for("compile_cache", False), *words_for("cell_ids", (cell_id,))]
    said = ["cudamatrix", "run"]
    a_path = False  # the word is a path flag's value
    for word in words:
        said.append(_path_word(word, root) if a_path else shlex.quote(word))
        a_path = not a_path and word in PATH_FLAGS
    return " ".join(said)
