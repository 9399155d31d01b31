"""Checks that can fail: a pattern that could never tell anything is refused; budgets."""

from __future__ import annotations

import pytest

from cudamatrix.stages.cell.specs import ResourceBudget
from cudamatrix.stages.inspect.artifact_text import cubin_strings, never_tells
from cudamatrix.stages.inspect.budgets import BUDGET_KEYS, BudgetVerdict, judge_budget


@pytest.mark.parametrize(("kind", "pattern"), [
    ("cubin", "STL|LDL"), ("sass", r"HMMA\.16816"), ("strings", "input is negative"),
    ("strings", "x\\x00?y"), ("ptx", "\\x00"), ("sass", "[^a]"), ("strings", "(?i)abort"),
])
def test_patterns_that_can_tell(kind: str, pattern: str) -> None:
    assert never_tells(kind, pattern) is None


@pytest.mark.parametrize(("kind", "pattern", "words"), [
    ("cubin", "x*", "matches the empty string"),
    ("ptx", "(fma)?", "matches the empty string"),
    ("strings", "\\x00abc", "can never match"),
    ("sass", "[\\x80-\\xff]+", "can never match"),
    ("strings", "a(\\x01|\\x02)", "can never match"),
])
def test_patterns_that_cannot(kind: str, pattern: str, words: str) -> None:
    assert words in (never_tells(kind, pattern) or "")


def test_strings_are_the_printable_runs() -> None:
    assert cubin_strings(b"\x7fELF\x00\x01input is negative\x00ab\x00%d\n") == \
        "input is negative"


SPILLING = [{"kernel": "_Z5spillPf", "registers": 32, "spill_store_bytes": 8,
             "spill_load_bytes": 8, "stack_bytes": 8, "smem_bytes": 0},
            {"kernel": "_Z5plainPf", "registers": 8, "spill_store_bytes": 0,
             "spill_load_bytes": 0, "stack_bytes": 0, "smem_bytes": 0}]


def _budget(**given: object) -> ResourceBudget:
    return ResourceBudget(**{key: given.get(key) for key in BUDGET_KEYS})  # type: ignore[arg-type]


def test_a_budget_names_the_kernel_the_figure_and_who_said_it() -> None:
    verdict = judge_budget(_budget(max_spill_stores=0), SPILLING, "ptxas 13.0.88, sm_80")
    assert isinstance(verdict, BudgetVerdict)
    assert verdict.broken == ["spill: 8 bytes of spill stores > max_spill_stores 0 "
                              "(ptxas 13.0.88, sm_80)"]
    only_plain = judge_budget(_budget(kernel="plain", max_spill_stores=0), SPILLING, "")
    assert isinstance(only_plain, BudgetVerdict) and not only_plain.broken


def test_a_budget_without_figures_or_kernel_is_a_case_error() -> None:
    assert "no figures" in str(judge_budget(_budget(max_registers=1), [], ""))
    assert "not a kernel" in str(judge_budget(_budget(kernel="nope", max_registers=1),
                                              SPILLING, ""))
