"""--baseline: a matrix run twice with a real change in between says what is new; under
GitHub Actions the new failures become annotations and the report the step summary."""

from __future__ import annotations

from pathlib import Path

from conftest import EVIDENCE, REPO
from cudamatrix.record.results import load_results
from cudamatrix.reports.github import (
    ANNOTATIONS_PER_TYPE,
    SUMMARY_LIMIT_BYTES,
    annotation_lines,
    step_summary,
)
from cudamatrix.reports.markdown import markdown_report

GOOD = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n'
BROKEN = GOOD.replace("2.0f", "undefined_name")


def _case(folder: Path, variants: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    toml = 'title = "evolving"\n'
    for name, text in variants.items():
        (folder / f"{name}.cu").write_text(text)
        toml += f'[[variant]]\nname = "{name}"\nsource = "{name}.cu"\nfrontend = "nvrtc"\n'
    (folder / "case.toml").write_text(toml)


def test_second_run_lists_new_failures_fixes_and_added_removed(run_cli, tmp_path: Path) -> None:
    case = tmp_path / "cases" / "evolving"
    args = ("run", "--corpus", str(tmp_path / "cases"), "--case", "evolving",
            "--toolkit", "12.4", "--arch", "sm_80", "--arch", "sm_90")
    _case(case, {"a": GOOD, "b": BROKEN, "c": GOOD})
    first = run_cli(*args, out=tmp_path / "first")
    assert first.code == 1  # b fails: without a baseline, any failure fails the run

    for old in case.glob("*.cu"):
        old.unlink()
    _case(case, {"a": BROKEN, "b": GOOD, "d": GOOD})
    summary_file = tmp_path / "summary.md"
    second = run_cli(*args, "--baseline", str(tmp_path / "first" / "results.json"),
                     out=tmp_path / "second",
                     env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary_file)})
    assert second.code == 1, second.output
    diff = second.results["baseline"]
    cells = {key: sorted(c["cell"] for c in diff[key]) for key in
             ("new_failures", "fixed", "flipped", "added", "removed")}
    assert cells == {
        "new_failures": ["evolving/a/12.4/sm_80", "evolving/a/12.4/sm_90"],
        "fixed": ["evolving/b/12.4/sm_80", "evolving/b/12.4/sm_90"],
        "flipped": [],
        "added": ["evolving/d/12.4/sm_80", "evolving/d/12.4/sm_90"],
        "removed": ["evolving/c/12.4/sm_80", "evolving/c/12.4/sm_90"],
    }
    assert "2 new failures, 2 fixed, 0 flipped, 2 added, 2 removed" in second.output
    markdown = (tmp_path / "second" / "COMPATIBILITY.md").read_text()
    # At the top: before the grid and the cases.
    assert markdown.index("## Changes since the baseline") < markdown.index("## At a glance") \
        < markdown.index("<strong>evolving</strong>")
    assert "`evolving/a/12.4/sm_80`: pass → fail: " in markdown
    errors = [ln for ln in second.output.splitlines() if ln.startswith("::error ")]
    assert len(errors) == 2 and all("evolving/a/12.4/sm_" in ln for ln in errors)
    assert "undefined_name" in errors[0]
    assert "Changes since the baseline" in summary_file.read_text()
    assert "Changes since the baseline" in (tmp_path / "second" / "report.html").read_text()

    # The same run against itself: nothing new, so nothing fails, old failures included.
    third = run_cli(*args, "--baseline", str(tmp_path / "second" / "results.json"),
                    out=tmp_path / "third")
    assert third.code == 0, third.output
    assert "0 new failures, 0 fixed" in third.output
    allowed = run_cli("report", str(tmp_path / "second" / "results.json"), "--baseline",
                      str(tmp_path / "first" / "results.json"), "--allow-new-failures",
                      out=tmp_path / "fourth")
    assert allowed.code == 0, allowed.output


def test_bad_baseline_is_a_clear_error(run_cli, tmp_path: Path) -> None:
    bad = tmp_path / "results.json"
    bad.write_text('{"not": "ours"}')
    run = run_cli("report", str(REPO / "reports" / "results.json"), "--baseline", str(bad),
                  out=tmp_path / "out")
    assert run.code == 2 and str(bad) in run.output and "not a cudamatrix" in run.output


def test_annotations_and_summary_keep_within_github_limits() -> None:
    # The H100's library corpus through the GPU server: its 12 case errors (unknown
    # kernel names, by design) are more than fit.
    info, results = load_results(EVIDENCE / "gpu-server-h100" / "lib-server-16"
                                 / "results.json")
    failing = [r for r in results if r.outcome in ("fail", "error")]
    assert len(failing) > ANNOTATIONS_PER_TYPE
    lines = annotation_lines(results, None)
    errors = [ln for ln in lines if ln.startswith("::error ")]
    assert len(errors) == ANNOTATIONS_PER_TYPE
    assert f"{len(failing) - ANNOTATIONS_PER_TYPE + 1} more failures" in errors[-1]
    assert all("\n" not in ln for ln in lines)

    markdown = markdown_report(info, results)
    assert step_summary(markdown) == markdown  # fits: unchanged
    huge = markdown * (2 * SUMMARY_LIMIT_BYTES // len(markdown.encode()) + 1)
    cut = step_summary(huge)
    assert len(cut.encode()) < SUMMARY_LIMIT_BYTES
    assert cut.rstrip().endswith("in the run's artifacts.")
