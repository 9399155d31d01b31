"""A pull request's run compared with the last published one (issue 56, points 1 and 2):
the baseline's cells of another tier or runner are outside the comparison, not "removed";
the same cell is found whether or not either side named its runner in the id; a shard run
more than once counts by its newest attempt; a shard's --fail-on never is 0 whatever its
cells did, and the default is unchanged."""

from __future__ import annotations

import argparse
from pathlib import Path

from cudamatrix.config.plan import Cell
from cudamatrix.record.baseline import Baseline, compare, runner_labels
from cudamatrix.record.merge import newest_attempts, shard_name
from cudamatrix.record.results import CellResult
from cudamatrix.stages.cell.result import StageResult


def _result(case: str, outcome: str, arch: str = "sm_90", runner: str = "") -> CellResult:
    cell = Cell(case, "nvrtc", "13.0", arch, "nvrtc", runner=runner)
    return CellResult(cell=cell, outcome=outcome, stage="compile", reached="compile",
                      message=f"{case} {outcome}", reason="", expected="", diagnosis=None,
                      stages=(StageResult("compile", "ok" if outcome == "pass" else "fail",
                                          ""),), seconds=0.1)


def _baseline(tier: str, labels: str, *results: CellResult) -> Baseline:
    return Baseline({r.cell.id: r.to_dict() for r in results}, tier, runner_labels(labels))


def test_a_nightly_baseline_judges_only_the_cells_a_pull_request_ran() -> None:
    nightly = _baseline(
        "nightly", "gpu-sm_90-driver-earliest, gpu-sm_90-driver-latest",
        _result("old", "fail", runner="gpu-sm_90-driver-earliest"),
        _result("old", "fail", runner="gpu-sm_90-driver-latest"),
        _result("nightly-only", "pass", runner="gpu-sm_90-driver-latest"))
    # The pull request ran one driver: its ids name no runner.
    pr = [_result("old", "fail"), _result("new", "fail")]
    diff = compare("published", nightly, pr, "pr", frozenset({"gpu-sm_90-driver-latest"}))
    assert [c.cell for c in diff.new_failures] == ["new/nvrtc/13.0/sm_90"]
    assert diff.removed == [] and diff.outside == 2
    assert [c.cell for c in diff.added] == ["new/nvrtc/13.0/sm_90"]


def test_the_same_tier_still_says_what_was_removed() -> None:
    before = _baseline("pr", "", _result("a", "pass"), _result("gone", "pass"))
    diff = compare("published", before, [_result("a", "pass")], "pr")
    assert [c.cell for c in diff.removed] == ["gone/nvrtc/13.0/sm_90"] and diff.outside == 0


def test_a_single_runner_baseline_matches_a_merge_that_names_its_runner() -> None:
    before = _baseline("pr", "gpu-sm_90-driver-latest", _result("a", "fail"))
    after = [_result("a", "fail", runner="gpu-sm_90-driver-latest")]
    diff = compare("published", before, after, "pr",
                   frozenset({"gpu-sm_90-driver-latest", "gpu-sm_80-driver-latest"}))
    assert diff.new_failures == [] and diff.added == [] and diff.removed == []


def test_the_newest_attempt_of_each_shard_is_merged() -> None:
    folders = [Path(p) for p in ("shards/results-a-1-of-1-attempt-1",
                                 "shards/results-b-1-of-1-attempt-1",
                                 "shards/results-b-1-of-1-attempt-2",
                                 "shards/results-c-1-of-1")]
    kept, older = newest_attempts(folders)
    assert [p.name for p in kept] == ["results-a-1-of-1-attempt-1",
                                      "results-b-1-of-1-attempt-2", "results-c-1-of-1"]
    assert [p.name for p in older] == ["results-b-1-of-1-attempt-1"]
    assert shard_name(kept[1]) == ("results-b-1-of-1", 2)
    assert newest_attempts(list(reversed(folders)))[0][1].name == "results-b-1-of-1-attempt-2"


def test_fail_on_decides_the_exit_status() -> None:
    from cudamatrix.commands.publishing import fail_on_of

    def said(**given: object) -> str:
        defaults = {"baseline": None, "fail_on": None, "allow_new_failures": False}
        return fail_on_of(argparse.Namespace(**{**defaults, **given}))

    assert said() == "any" and said(baseline=Path("b.json")) == "new"
    assert said(fail_on="never") == "never" and said(allow_new_failures=True) == "never"
    assert said(baseline=Path("b.json"), fail_on="any") == "any"


def test_a_subset_run_does_not_call_the_cells_it_did_not_ask_for_removed() -> None:
    """Issue 61: `run --case a --baseline full.json` listed every other case's cells as
    "removed"; those it did not select are outside the comparison, and a selected cell
    that is gone is still removed."""
    from cudamatrix.record.baseline import RunSelection

    before = _baseline("pr", "", _result("a", "pass"), _result("a", "pass", arch="sm_80"),
                       _result("b", "pass"), _result("c", "fail"))
    one_case = RunSelection(cases=frozenset({"a"}))
    diff = compare("published", before, [_result("a", "pass")], "pr", selection=one_case)
    assert [c.cell for c in diff.removed] == ["a/nvrtc/13.0/sm_80"] and diff.outside == 2
    one_arch = RunSelection(cases=frozenset({"a"}), archs=frozenset({"sm_90"}))
    diff = compare("published", before, [_result("a", "pass")], "pr", selection=one_arch)
    assert diff.removed == [] and diff.outside == 3
    one_cell = RunSelection(cell_ids=frozenset({"b/nvrtc/13.0/sm_90"}))
    diff = compare("published", before, [_result("b", "pass")], "pr", selection=one_cell)
    assert diff.removed == [] and diff.outside == 3
    shard = RunSelection(sharded=True)  # the merge of every shard judges removals
    assert compare("published", before, [_result("a", "pass")], "pr",
                   selection=shard).removed == []
