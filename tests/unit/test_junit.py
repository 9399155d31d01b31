"""junit.xml as CI test views read it (issue 58, point 5): an expected failure is a skipped
test with a type and a message, as pytest writes an xfail; an unexpected pass is a failure.
Read back with junitparser from the published H100 run's records."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped

from cudamatrix.record.results import load_results
from cudamatrix.reports.junit import junit_xml

REPO = Path(__file__).resolve().parents[2]


def _read_back(tmp_path: Path, text: str) -> dict[str, list[object]]:
    (tmp_path / "junit.xml").write_text(text)
    results: dict[str, list[object]] = {}
    for suite in JUnitXml.fromfile(str(tmp_path / "junit.xml")):
        for case in suite:
            results[f"{case.classname}/{case.name}"] = list(case.result)
    return results


def test_expected_failures_are_skipped_with_a_type_and_a_reason(tmp_path: Path) -> None:
    info, cells = load_results(REPO / "reports" / "results.json")
    outcomes = Counter(r.outcome for r in cells)
    assert outcomes["xfail"] > 0
    document = JUnitXml.fromstring(junit_xml(info, cells))
    assert document.skipped == outcomes["xfail"] + outcomes["skip"]
    assert document.failures == outcomes["fail"] + outcomes["xpass"]
    read = _read_back(tmp_path, junit_xml(info, cells))
    xfails = [r for r in cells if r.outcome == "xfail"]
    for result in xfails:
        cell = result.cell
        name = "/".join(p for p in (cell.variant, cell.toolkit, cell.arch,
                                    f"{cell.library}-{cell.library_version}"
                                    if cell.library else "") if p)
        (said,) = read[f"{cell.case}.{cell.variant}/{name}"]
        assert isinstance(said, Skipped)
        assert said.type == "cudamatrix.xfail"
        assert said.message.startswith(f"expected failure at {result.stage}: ")


def test_an_unexpected_pass_is_a_failure(tmp_path: Path) -> None:
    info, cells = load_results(REPO / "reports" / "results.json")
    target = next(r for r in cells if r.outcome == "xfail")
    cells = [dataclasses.replace(target, outcome="xpass") if r is target else r for r in cells]
    document = JUnitXml.fromstring(junit_xml(info, cells))
    failures = [res for suite in document for case in suite for res in case.result
                if isinstance(res, Failure)]
    assert len(failures) == 1 and failures[0].type == "xpass"


def test_an_error_is_an_error_not_a_failure() -> None:
    """A cell the tool or its environment broke is JUnit's <error>, as pytest writes a
    test that raised outside its assertion: a CI test view tells a broken runner from
    code that failed its case, and counts the two apart."""
    info, cells = load_results(REPO / "reports" / "results.json")
    before = JUnitXml.fromstring(junit_xml(info, cells))
    target = next(r for r in cells if r.outcome == "xfail")
    cells = [dataclasses.replace(target, outcome="error") if r is target else r for r in cells]
    after = JUnitXml.fromstring(junit_xml(info, cells))
    assert (after.errors, after.failures) == (before.errors + 1, before.failures)
    errors = [res for suite in after for case in suite for res in case.result
              if isinstance(res, Error)]
    assert errors and all(e.type == "error" for e in errors)
