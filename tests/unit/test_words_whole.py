"""Issue 82, item 6: words are never cut inside a word, and a fix never at all. The
Markdown's diagnosis was its title and the first 400 characters of its explanation, cut
mid-word ("...is not na") and without the fix the rule gives; the first screen's messages,
the notes and the terminal's line were cut the same way. Pure: cells as a run records them,
diagnosed by the real rules."""

from __future__ import annotations

import re

from cudamatrix.config.plan import Cell
from cudamatrix.record.diagnose import diagnose
from cudamatrix.record.results import CellResult, RunInfo
from cudamatrix.reports.answers import said_message
from cudamatrix.reports.markdown import markdown_report, md_text
from cudamatrix.stages.cell.result import StageResult

# A real compiler's message whose rule (cupy-fp16-older-than-bf16) explains it in more
# than 400 characters and gives a fix.
FP16 = ('cuda_bf16.hpp(124): error: no instance of overloaded function "__half::__half" '
        'matches the specified type')
CUT_MARK = " …"  # what ends a text cut at a word (common/words.py)
INFO = RunInfo(started="", finished="", tier="pr", provider="wheels", host="", tool_version="")


def _failed(message: str) -> CellResult:
    diagnosis = diagnose(message).to_dict()
    return CellResult(cell=Cell("fp16", "cupy", "12.4", "sm_80", "cupy"), outcome="fail",
                      stage="compile", reached="", message=message, reason="", expected="pass",
                      diagnosis=diagnosis,
                      stages=(StageResult("compile", "failed", message),), seconds=1.0)


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'`]+", text)


def test_the_markdown_diagnosis_ends_at_a_word_and_its_fix_is_whole() -> None:
    cell = _failed(FP16)
    diagnosis = cell.diagnosis or {}
    assert diagnosis["rule"] == "cupy-fp16-older-than-bf16"
    assert len(diagnosis["explanation"]) > 400 and diagnosis["fix"]
    text = markdown_report(INFO, [cell])
    said = next(line for line in text.splitlines() if line.startswith("- Diagnosis: "))
    explained = said.split(": ", 2)[2]
    assert explained.endswith(CUT_MARK)
    kept = _words(explained)
    whole = _words(md_text(diagnosis["explanation"]))
    assert kept == whole[:len(kept)], "the explanation was cut inside a word"
    assert f"- Fix: {md_text(diagnosis['fix'])}" in text.splitlines()


def test_a_cut_ends_at_a_word_and_says_it_was_cut() -> None:
    from cudamatrix.common.words import shortened

    text = "the module holds sm_80 only and this GPU is not named in it"
    assert shortened(text, len(text)) == text
    cut = shortened(text, 40)
    assert len(cut) <= 40 and cut == "the module holds sm_80 only and this …"
    assert shortened("x" * 50, 10) == "x" * 8 + CUT_MARK  # one long word: cut, and marked
    assert md_text(text, 40) == "the module holds sm_80 only and this …"


def test_the_first_screens_message_ends_at_a_word() -> None:
    message = "ptxas error: Entry function uses too much shared data " + "because " * 20
    said = said_message(_failed(message))
    assert said.endswith(CUT_MARK) and len(said) <= 100
    assert said[:-len(CUT_MARK)].split() == message.split()[:len(said.split()) - 1]
