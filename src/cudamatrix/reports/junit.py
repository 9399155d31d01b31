"""junit.xml: one testsuite per case, one testcase per cell, axes as properties.

Written in time linear in the cells: junitparser's own ways of adding (add_testcase,
add_testsuite) recount or compare everything added before on every call, so the elements
are appended and counted once here (8,000 cases took 31.8x the CPU of 1,000, and a
40,000-case shard's merge was still writing at 900 s: tests/unit/test_junit_linear.py
counts the work)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

from ..common.words import shortened
from ..record.outcomes import JUNIT_FAILURES
from ..record.results import CellResult, RunInfo
from .formats import ReportFormat

# XML 1.0 allows no control characters but tab, newline and carriage return;
# compiler and device output can carry any byte.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("?", text)


def _testcase(result: CellResult) -> TestCase:
    cell = result.cell
    name = "/".join(p for p in (cell.variant, cell.toolkit, cell.arch,
                                f"{cell.library}-{cell.library_version}" if cell.library else "")
                    if p)
    case = TestCase(name, classname=f"{cell.case}.{cell.variant}", time=round(result.seconds, 3))
    detail = result.message or result.reason
    if result.outcome in JUNIT_FAILURES:
        # An unexpected pass is a failure, as pytest's strict xfail writes one: the case's
        # expectation no longer holds (the bug may be fixed upstream).
        failure = Failure(_xml_text(f"{result.outcome} at {result.stage}: {detail}"),
                          type_=result.outcome)
        failure.text = _xml_text(result.log)
        case.result = [failure]
    elif result.outcome == "error":
        error = Error(_xml_text(f"error at {result.stage}: {detail}"), type_="error")
        error.text = _xml_text(result.log)
        case.result = [error]
    elif result.outcome == "skip":
        case.result = [Skipped(_xml_text(f"{result.reason}: {result.message}".strip(": ")))]
    elif result.outcome == "xfail":
        # An expected failure is a skipped test with a type, as pytest writes an xfail
        # (``<skipped type="pytest.xfail" message=...>``): GitHub's and GitLab's test views
        # show it apart from a pass, with why it was expected.
        said = f"expected failure at {result.stage}: {result.note or result.reason}"
        if result.message:
            said += f" ({result.message})"
        case.result = [Skipped(_xml_text(shortened(said, 2000)), type_="cudamatrix.xfail")]
    case.system_out = _xml_text(f"outcome: {result.outcome} ({result.reason})\n"
                                + result.log)[:100_000]
    return case


def junit_xml(info: RunInfo, results: Sequence[CellResult]) -> str:
    suites: dict[str, list[CellResult]] = defaultdict(list)
    for result in results:
        suites[result.cell.case].append(result)
    document = JUnitXml("cudamatrix")
    counted: list[TestSuite] = []
    for case, cells in suites.items():
        suite = TestSuite(case)
        properties = Properties()
        for key, value in (("tier", info.tier), ("provider", info.provider),
                           ("toolkits", ",".join(info.toolkits)),
                           ("gpu", (info.device or {}).get("name", "none")),
                           ("driver", (info.device or {}).get("driver", "none"))):
            properties.add_property(Property(key, str(value)))
        suite.append(properties)
        # append, then count once: junitparser's add_testcase recounts the whole suite on
        # every call, quadratic in its cells (an audit of vLLM's wheel: 10k cells, 270 s).
        for result in cells:
            suite.append(_testcase(result))
        suite.update_statistics()
        # append, not add_testsuite: that compares the suite with every suite before it
        # (quadratic in the cases), to merge suites of one name, and each case is one suite.
        document.append(suite)
        counted.append(suite)
    # The document's figures summed from its suites' (update_statistics would count every
    # suite's cells again).
    document.tests = sum(s.tests for s in counted)
    document.failures = sum(s.failures for s in counted)
    document.errors = sum(s.errors for s in counted)
    document.skipped = sum(s.skipped for s in counted)
    document.time = round(sum(s.time for s in counted), 3)
    written = document.tostring()
    return written.decode() if isinstance(written, bytes) else str(written)


FORMAT = ReportFormat("junit.xml", lambda run: junit_xml(run.info, run.results))
