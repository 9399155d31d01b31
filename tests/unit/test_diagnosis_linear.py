"""Every diagnosis rule takes time linear in what it reads (issue 68, point 7): a cell's
output is a stranger's, and one 48 KiB line once kept a quadratic rule (the device
assert's) busy for most of a minute inside the run's own process, past `--run-timeout`.

Each rule is searched in adversarial lines made of its own words and of the characters
its patterns stop at, at growing sizes up to 64 KiB; a size four times larger may take
about four times longer, never the sixteen a quadratic pattern needs. The comparison,
not a timer, is the test, and it compares this thread's CPU seconds (time.thread_time),
not wall seconds: a search is CPU work in this thread, and another process on a loaded
machine stretches the wall clock of one size and not the other. (What a rule reads
is bounded too, DIAGNOSED_*: a 256 KiB line, which took a quadratic rule about 30
minutes, is cut to its ends before any rule reads it.)"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from cudamatrix.record.diagnose import (
    DIAGNOSED_LINE_CHARS,
    DIAGNOSED_LOG_CHARS,
    DIAGNOSED_MESSAGE_CHARS,
    Rule,
    decisive_message,
    diagnose,
    diagnose_stage,
    rules,
)
from cudamatrix.stages.cell.result import StageResult

SIZES = (4 << 10, 16 << 10, 64 << 10)
# Every adversary of a rule together at one size, on a loaded machine: a linear rule's
# total stays far below it (milliseconds each); the quadratic device-assert rule took
# 11 s on one 16 KiB line.
QUICK_S = 3.0
# What the patterns stop at or repeat over: words, spaces, paths, file:line, digits, quotes.
FILLERS = ("a", " ", "\n", "a/", "a:1: ", "9", "'", "`", "(", "<", "x.cu:1: ", "::a")
TRIGGERS = ("device-side assert triggered ", "CUDA_ERROR_ASSERT ")


def _pieces(pattern: str) -> list[str]:
    """The pattern's literal runs (its words, unescaped), which an attacker repeats."""
    literal = re.sub(r"\\(.)", r"\1", re.sub(r"\\[dswDSW]|\[[^\]]*\]|\(\?[^:)]*:?", "|",
                                             pattern))
    return sorted({p for p in re.split(r"[|()?*+{}^$]", literal) if len(p) >= 3})[:8]


def _repeated(head: str, filler: str, glue: str = "") -> Callable[[int], str]:
    """`head`, then `filler` (and `glue` after each) repeated to about n characters."""
    return lambda n: head + (filler + glue) * ((n - len(head)) // len(filler + glue))


def _adversaries(rule: Rule) -> dict[str, Callable[[int], str]]:
    made = {f"{filler!r}*n": _repeated("", filler) for filler in FILLERS}
    for piece in [*_pieces(rule.pattern.pattern), *TRIGGERS]:
        made[f"{piece!r}*n"] = _repeated("", piece, " ")
        made[f"{piece!r} glued*n"] = _repeated("", piece)
        for filler in FILLERS:
            made[f"{piece!r}+{filler!r}*n"] = _repeated(piece, filler)
    return made


def _seconds(pattern: re.Pattern[str], text: str) -> float:
    began = time.thread_time()
    pattern.search(text)
    return time.thread_time() - began


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r.name)
def test_every_rule_is_linear_in_its_input(rule: Rule) -> None:
    """All of a rule's adversaries together, at each size: their total is steadier on a
    busy machine than one search's, and a quadratic one dominates it."""
    adversaries = _adversaries(rule)
    before = 0.0
    for size in SIZES:
        took = {name: _seconds(rule.pattern, make(size)) for name, make in adversaries.items()}
        total = sum(took.values())
        if before:
            slowest = max(took, key=lambda name: took[name])
            # Four times the input: four times the time, with room for a noisy machine;
            # a quadratic pattern takes sixteen. A machine busy enough to stretch one
            # size alone (CI's two cores under a parallel lane) still keeps a linear rule
            # within QUICK_S at 64 KiB, where a quadratic one took minutes.
            assert total <= 10 * before + 0.25 or total <= QUICK_S, (
                f"{rule.name}: {size >> 10} KiB took {total:.3f} s, a quarter of it "
                f"{before:.4f} s; slowest on {slowest} ({took[slowest]:.3f} s)")
        before = total


@pytest.mark.parametrize("rule", [r for r in rules() if r.figure is not None],
                         ids=lambda r: r.name)
def test_every_figure_is_linear_in_its_input(rule: Rule) -> None:
    """A rule's `figure` is searched through the stage's log (its last 64 KiB): held to the
    same measure as the rule's own pattern."""
    assert rule.figure is not None
    test_every_rule_is_linear_in_its_input(replace(rule, pattern=rule.figure))


def test_the_real_assert_line_is_still_read() -> None:
    """The linear device-assert rule still names the file, line and condition of the
    process output it is given, after a long line of noise."""
    noise = "x" * (256 << 10)
    message = ("cuCtxSynchronize: CUDA_ERROR_ASSERT (device-side assert triggered) (process "
               "output: /work/faults.cu:21: void f(float *, int): block: [0,0,0], thread: "
               "[224,0,0] Assertion `x[threadIdx.x] > 100.0f` failed.)")
    stage = StageResult("run", "failed", message, f"{noise}\n{message}\n")
    diagnosis = diagnose_stage(message, stage)
    assert diagnosis.rule == "device-assert"
    assert "assert(x[threadIdx.x] > 100.0f) at faults.cu:21" in diagnosis.title


def test_diagnosis_reads_a_bounded_part_of_the_output() -> None:
    """Whatever a cell printed, the rules read at most a bounded head and tail of the
    message and of the log (their last lines), each line cut: what is diagnosed is bounded
    before any rule runs, and the decisive words at either end are still found."""
    huge = "b" * (8 << 20)
    message = f"cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS {huge} end"
    began = time.thread_time()
    diagnosis = diagnose_stage(message, StageResult("run", "failed", message,
                                                    f"{huge}\n" * 4 + "ok\n"))
    assert diagnosis.rule == "illegal-address"
    assert len(diagnosis.evidence) <= DIAGNOSED_MESSAGE_CHARS + 1
    assert time.thread_time() - began < 5
    assert DIAGNOSED_LINE_CHARS <= DIAGNOSED_LOG_CHARS


def test_finding_the_decisive_message_is_linear() -> None:
    """What the rules read is found first (a message that is only a path gives way to an
    error line, a line's leading place is set aside): that reading is linear too."""
    before = 0.0
    for size in SIZES:
        began = time.thread_time()
        for filler in ("a/", "/", "a(1)", ":1", "a/a(1): "):
            text = filler * (size // len(filler))
            decisive_message(text + " x", [text + " here x", text])
            diagnose(text + "(1)", [text + "(1): x"])
        took = time.thread_time() - began
        assert not before or took <= 10 * before + 0.25, (size, took, before)
        before = took
