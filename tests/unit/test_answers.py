"""The first screen (issue 25, point 2): each case's sentence, read back from the Markdown
the way a maintainer reads it, names every one of the case's cells exactly once, with what
that cell really did and how many were unexpected; the grid has a symbol per cell. Checked
on every real run the repository keeps, and on cells made here."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cudamatrix.common.versions import Arch
from cudamatrix.record.results import CellResult, RunInfo, load_results
from cudamatrix.reports.answers import (
    RANGE,
    answer_grid,
    case_answers,
    natural_key,
    said_message,
    spans,
    where_key,
)
from cudamatrix.reports.glance import UNEXPECTED, happened
from cudamatrix.reports.labels import row_label
from cudamatrix.reports.symbols import SYMBOLS, UNEXPECTED_MARK, VERBS

REPO = Path(__file__).resolve().parents[2]
EVIDENCE = REPO / "bench" / "evidence"  # the runs kept as evidence of past changes
# The published run and every run kept as evidence of a change.
RUNS = sorted(p for folder in (REPO / "reports", EVIDENCE)
              for p in folder.rglob("results.json") if "audit" not in p.parts)
VERB_OF = {words: what for what, words in VERBS.items()}
PHRASE = re.compile(r"(?P<verb>" + "|".join(sorted(map(re.escape, VERB_OF), key=len,
                                                        reverse=True))
                    + r") (?P<places>on the other (?P<other>\d+) cells|on .+?)"
                    r"(?:: (?P<message>.*?))?"
                    rf"(?: \({UNEXPECTED_MARK} (?P<unexpected>\d+) unexpected\))?$")


def _expand(text: str, universe: list[str]) -> list[str]:
    values = []
    for token in text.split(", "):
        first, dash, last = token.partition(RANGE)
        if dash:
            values += universe[universe.index(first):universe.index(last) + 1]
        else:
            assert token in universe, (token, universe)
            values.append(token)
    return values


def _places(text: str) -> list[tuple[str, str]]:
    """'on A for B and on C for D' -> [(A, B), (C, D)]."""
    assert text.startswith("on "), text
    return [tuple(part.split(" for ", 1)) for part in text[3:].split(" and on ")]  # type: ignore[misc]


def _glance_lines(cells: list[CellResult]) -> dict[str, str]:
    """Each case's sentence as the page says it (Markdown no longer repeats what the grid
    shows)."""
    return {a.case: a.sentence() for a in case_answers(cells)}


def _check_sentence(case: str, sentence: str, cells: list[CellResult]) -> None:
    universe_where = sorted({row_label(r.cell) for r in cells}, key=where_key)
    universe_arch = sorted({r.cell.arch for r in cells}, key=Arch.parse)
    variants = list(dict.fromkeys(r.cell.variant for r in cells))
    if len(variants) == 1:
        parts = {variants[0]: sentence}
    else:
        pattern = " · ".join(f"`{re.escape(v)}`: (.*)" for v in variants)
        match = re.fullmatch(pattern, sentence)
        assert match, f"{case}: variants not each said once, in order: {sentence}"
        parts = dict(zip(variants, match.groups(), strict=True))
    verbs = "|".join(map(re.escape, VERB_OF))
    for variant, said in parts.items():
        mine = {(row_label(r.cell), r.cell.arch): r for r in cells if r.cell.variant == variant}
        named: Counter[tuple[str, str]] = Counter()
        rest = None
        for phrase in re.split(rf"; (?=(?:{verbs}) on )", said):
            match = PHRASE.match(phrase)
            assert match, f"{case}/{variant}: cannot read {phrase!r}"
            what = VERB_OF[match["verb"]]
            unexpected = int(match["unexpected"] or 0)
            if match["other"]:
                rest = (what, int(match["other"]), unexpected)
                continue
            places = match["places"] if match["message"] is None \
                else phrase[len(match["verb"]) + 1:].split(": ", 1)[0]
            found = []
            for where, archs in _places(places):
                for label in _expand(where, universe_where):
                    for arch in _expand(archs, universe_arch):
                        key = (label, arch)
                        assert key in mine, f"{case}/{variant}: {key} is no cell of it"
                        assert happened(mine[key]) == what, (case, variant, key, what)
                        if match["message"] is not None:  # each cell's own words
                            assert said_message(mine[key]) == match["message"], \
                                (case, variant, key, match["message"])
                        found.append(key)
            named.update(found)
            assert sum(mine[k].outcome in UNEXPECTED for k in found) == unexpected, phrase
        assert all(n == 1 for n in named.values()), f"{case}/{variant}: a cell said twice"
        left = [k for k in mine if k not in named]
        if rest is None:
            assert not left, f"{case}/{variant}: cells never said: {left}"
        else:
            what, count, unexpected = rest
            assert len(left) == count, (case, variant, left, count)
            assert all(happened(mine[k]) == what for k in left), (case, variant)
            assert sum(mine[k].outcome in UNEXPECTED for k in left) == unexpected


@pytest.mark.parametrize("results", RUNS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_sentence_names_every_cell_of_its_case_once_as_it_happened(results: Path) -> None:
    _, cells = load_results(results)
    built = [r for r in cells if r.cell.frontend != "audit"]
    lines = _glance_lines(cells)
    by_case: dict[str, list[CellResult]] = {}
    for r in built:
        by_case.setdefault(r.cell.case, []).append(r)
    assert set(lines) == set(by_case)
    for case, sentence in lines.items():
        _check_sentence(case, sentence, by_case[case])


@pytest.mark.parametrize("results", RUNS, ids=lambda p: str(p.relative_to(REPO)))
def test_the_grid_has_one_symbol_per_cell(results: Path) -> None:
    info, cells = load_results(results)
    built = [r for r in cells if r.cell.frontend != "audit"]
    grid = answer_grid(cells, info)
    shown = [c for row in grid.rows for c in row.cells if c is not None]
    assert sorted(c.result.cell.id for c in shown) == sorted(r.cell.id for r in built)
    for c in shown:
        assert c.symbol == SYMBOLS[happened(c.result)]
        assert c.unexpected == (c.result.outcome in UNEXPECTED)
        if c.unexpected:
            assert f"--cell {c.result.cell.id.split('@')[0]}" in c.title


def _cell(toolkit: str, arch: str, outcome: str, failed_at: str | None,
          variant: str = "v", message: str = "") -> CellResult:
    stages = [{"stage": s, "status": "ok"} for s in ("compile", "inspect", "load", "run")]
    if failed_at:
        at = [s["stage"] for s in stages].index(failed_at)
        stages = [*stages[:at], {"stage": failed_at, "status": "failed", "message": message}]
    data: dict[str, Any] = {"case": "c", "variant": variant, "toolkit": toolkit, "arch": arch,
                            "frontend": "nvcc", "outcome": outcome,
                            "stage": failed_at or "run", "message": message, "stages": stages}
    return CellResult.from_dict(data)


def test_a_sentence_reads_like_the_issue_asks() -> None:
    """builds and runs on 12.4–13.5 for sm_80–sm_120; fails to compile on 11.8 for sm_90a."""
    toolkits = ["11.8", "12.4", "12.8", "13.0", "13.5"]
    archs = ["sm_80", "sm_90", "sm_90a", "sm_120"]
    cells = [_cell(t, a, "pass", None) for t in toolkits[1:] for a in archs]
    cells += [_cell("11.8", "sm_90a", "fail", "compile", message="ptxas fatal : Value 'sm_90a'"
                    " is not defined for option 'gpu-name'")]
    (answer,) = case_answers(cells)
    assert answer.sentence() == (
        "builds and runs on 12.4–13.5 for sm_80–sm_120; fails to compile on 11.8 for sm_90a: "
        f"ptxas fatal : Value 'sm_90a' is not defined for option 'gpu-name' ({UNEXPECTED_MARK}"
        " 1 unexpected)")


def test_cells_that_failed_in_other_words_are_said_apart() -> None:
    """Issue 38: `fails to compile on 12.4, 13.0 ...: cuda/cmath: No such file` gave
    12.4's message to 13.0, which failed with `qualified name is not allowed`. Each
    message now has its own phrase, and reading the sentence back gives each cell its own."""
    cmath = "fastdiv.cuh:19:10: fatal error: cuda/cmath: No such file or directory"
    qualified = "fastdiv.cuh(39): error: qualified name is not allowed"
    cells = [_cell("12.4", a, "fail", "compile", message=cmath) for a in ("sm_80", "sm_90a")]
    cells += [_cell("13.0", a, "fail", "compile", message=qualified) for a in ("sm_80", "sm_90a")]
    cells += [_cell("13.1", a, "pass", None) for a in ("sm_80", "sm_90a")]
    (answer,) = case_answers(cells)
    sentence = answer.sentence()
    assert sentence == (
        "builds and runs on 13.1 for sm_80, sm_90a; "
        f"fails to compile on 12.4 for sm_80, sm_90a: {cmath} ({UNEXPECTED_MARK} 2 unexpected); "
        f"fails to compile on 13.0 for sm_80, sm_90a: {qualified} ({UNEXPECTED_MARK} 2 "
        "unexpected)")
    _check_sentence("c", sentence, cells)
    # The most common outcome said as "the other cells" keeps one message too.
    many = cells + [_cell("12.8", a, "fail", "compile", message=qualified)
                    for a in ("sm_80", "sm_90a")]
    _check_sentence("c", case_answers(many)[0].sentence(), many)


def test_the_most_common_outcome_is_said_last_as_the_other_cells() -> None:
    cells = [_cell(t, a, "pass", None) for t in ("12.4", "13.0", "13.5")
             for a in ("sm_80", "sm_90")]
    cells[-1] = _cell("13.5", "sm_90", "fail", "load", message="CUDA_ERROR_NO_BINARY_FOR_GPU")
    cells[0] = _cell("12.4", "sm_80", "xfail", "run", message="wrong result")
    said = case_answers(cells)[0].sentence()
    assert said == ("fails to load on 13.5 for sm_90: CUDA_ERROR_NO_BINARY_FOR_GPU "
                    f"({UNEXPECTED_MARK} 1 unexpected); fails at run on 12.4 for sm_80: wrong "
                    "result; builds and runs on the other 4 cells")


def test_spans_say_neighbours_as_ranges_and_the_rest_by_name() -> None:
    universe = ["11.8", "12.0", "12.4", "12.8", "13.0"]
    assert spans(["12.0", "12.4", "12.8"], universe) == f"12.0{RANGE}12.8"
    assert spans(["11.8", "12.4", "13.0"], universe) == "11.8, 12.4, 13.0"
    assert spans(["12.8", "13.0", "11.8"], universe) == "11.8, 12.8, 13.0"


def test_a_message_names_the_file_not_the_folders_it_sits_in() -> None:
    cells = [_cell("12.4", "sm_80", "fail", "compile",
                   message="/root/.cache/cudamatrix/libraries/cutlass/include/x.inl(228): error")]
    assert "x.inl(228): error" in case_answers(cells)[0].sentence()
    assert "/root" not in case_answers(cells)[0].sentence()


@pytest.mark.parametrize(("stages", "outcome", "said"), [
    # Written out, not computed: what each record of stages really did, as the sentence
    # checks above read it back through happened().
    ([("compile", "ok"), ("inspect", "ok"), ("load", "ok"), ("run", "ok")], "pass", "runs"),
    ([("compile", "ok"), ("load", "ok")], "pass", "loads"),
    ([("compile", "ok"), ("inspect", "ok"), ("load", "skipped")], "pass", "builds"),
    ([("compile", "failed")], "xfail", "fails at compile"),
    ([("compile", "ok"), ("inspect", "failed")], "fail", "fails at inspect"),
    ([("compile", "ok"), ("load", "failed")], "xfail", "fails at load"),
    ([("compile", "ok"), ("load", "ok"), ("run", "timeout")], "error", "fails at run"),
    ([("compile", "unsupported")], "skip", "skipped"),
])
def test_what_happened_is_read_off_the_stages(stages: list[tuple[str, str]], outcome: str,
                                               said: str) -> None:
    data: dict[str, Any] = {"case": "c", "variant": "v", "toolkit": "13.0", "arch": "sm_90",
                            "frontend": "nvcc", "outcome": outcome, "stage": stages[-1][0],
                            "stages": [{"stage": s, "status": st} for s, st in stages]}
    assert happened(CellResult.from_dict(data)) == said


def test_natural_key_orders_numbers_by_value() -> None:
    """Issue 70, 4: cache1, cache2, cache10, as a reader counts, not as text sorts."""
    names = ["cache10", "cache2", "Cache3", "cache1", "a-12.8", "a-12.10", "b", "10x", "9x"]
    assert sorted(names, key=natural_key) == [
        "9x", "10x", "a-12.8", "a-12.10", "b", "cache1", "cache2", "Cache3", "cache10"]


def test_grid_rows_and_sentences_in_natural_order() -> None:
    """The run's order is its cell files' (text: cache1, cache10, cache2); the grid's rows and
    the case sentences follow the names' natural order instead."""
    cells = [CellResult.from_dict({"case": case, "variant": v, "toolkit": "12.8",
                                   "arch": "sm_90", "frontend": "nvcc", "outcome": "pass",
                                   "stage": "compile", "stages": []})
             for case in ("cache1", "cache10", "cache2") for v in ("v10", "v9")]
    info = RunInfo(started="", finished="", tier="pr", provider="wheels", host="",
                   tool_version="")
    grid = answer_grid(cells, info)
    assert [(row.case, row.variant) for row in grid.rows] == [
        ("cache1", "v9"), ("cache1", "v10"), ("cache2", "v9"), ("cache2", "v10"),
        ("cache10", "v9"), ("cache10", "v10")]
    assert [a.case for a in case_answers(cells)] == ["cache1", "cache2", "cache10"]
