"""The bisect's search (issue 26): binary search on what happened, every change found by
halving each stretch whose ends differ, values that cannot be run skipped as `git bisect
skip` does, each value probed at most once. Pure: a probe is a list of outcomes."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudamatrix.commands.bisection import Key, search


def _probe(outcomes: list[str | None], calls: Counter[int]):
    def probe(index: int) -> Key | None:
        calls[index] += 1
        said = outcomes[index]
        return None if said is None else (said, "")
    return probe


def test_one_change_in_few_probes() -> None:
    outcomes = ["fails"] * 8 + ["builds"] * 3  # 12.0 .. 13.0: cuda_fp4.h from 12.8
    calls: Counter[int] = Counter()
    assert search(len(outcomes), _probe(outcomes, calls)) == [(7, 8)]
    assert len(calls) <= 6 and max(calls.values()) == 1


def test_several_changes_are_all_found() -> None:
    outcomes = ["a", "a", "b", "b", "b", "c", "c", "d"]
    assert search(len(outcomes), _probe(outcomes, Counter())) == [(1, 2), (4, 5), (6, 7)]
    # As git bisect, it halves only stretches whose ends differ: a change that is undone
    # before the far end shows only where a probe lands inside it.
    assert search(3, _probe(["a", "b", "a"], Counter())) == []


def test_a_change_next_to_values_that_cannot_run_is_the_stretch_it_lies_in() -> None:
    outcomes = ["a", "a", None, None, "b", "b"]
    assert search(len(outcomes), _probe(outcomes, Counter())) == [(1, 4)]


def test_ends_that_cannot_run_move_inwards_and_equal_ends_say_no_change() -> None:
    assert search(5, _probe([None, "a", "a", "b", None], Counter())) == [(2, 3)]
    assert search(4, _probe(["a", "a", "a", "a"], Counter())) == []


@given(st.lists(st.sampled_from(["a", "b", None]), min_size=2, max_size=40))
def test_every_reported_change_is_real_and_adjacent_among_runnable_values(
        outcomes: list[str | None]) -> None:
    calls: Counter[int] = Counter()
    changes = search(len(outcomes), _probe(outcomes, calls))
    assert all(n == 1 for n in calls.values())
    for lo, hi in changes:
        assert outcomes[lo] is not None and outcomes[hi] is not None
        assert outcomes[lo] != outcomes[hi]
        assert all(outcomes[i] is None for i in range(lo + 1, hi))
    runnable = [o for o in outcomes if o is not None]
    if len(runnable) >= 2 and runnable[0] != runnable[-1]:
        assert changes, outcomes  # ends that differ always give a change


@pytest.mark.parametrize("count", [0, 1])
def test_too_few_values_give_nothing(count: int) -> None:
    assert search(count, _probe(["a"] * count, Counter())) == []
