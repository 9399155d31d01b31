"""The matrix compiled for real: NVRTC and ptxas from the 12.4 and 13.0 wheels."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

ARGS = ("run", "--toolkit", "12.4", "--toolkit", "13.0", "--arch", "sm_75", "--arch", "sm_90a",
        "--case", "smem-oversize", "--case", "marlin-sm75", "--case", "wmma-jitify")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from conftest import cudamatrix

    return cudamatrix(*ARGS, out=tmp_path_factory.mktemp("matrix"))


def test_run_succeeds_without_errors(run) -> None:
    assert run.code == 0, run.output
    outcomes = {c["outcome"] for c in run.results["cells"]}
    assert "error" not in outcomes and "fail" not in outcomes


def test_static_shared_memory_depends_on_toolkit_and_arch(run) -> None:
    cells = run.cells()
    accepted = cells["smem-oversize/static-0xc010/12.4/sm_75"]
    assert accepted["outcome"] == "pass"
    assert accepted["resources"][0]["smem_bytes"] == 0xC010
    refused = cells["smem-oversize/static-0xc010/13.0/sm_75"]
    assert refused["outcome"] == "xfail"
    # Straight to a cubin, as CuPy compiles, NVRTC's ptxas reports the bytes and no error,
    # and NVRTC refuses with nothing but its return code.
    assert refused["message"] == \
        "error: nvrtcCompileProgram returned NVRTC_ERROR_COMPILATION"
    assert "49168 bytes smem" in refused["stages"][0]["log"]
    assert refused["diagnosis"]["rule"] == "nvrtc-refused-silently"
    assert cells["smem-oversize/static-0xc010/13.0/sm_90a"]["outcome"] == "pass"
    assert cells["smem-oversize/dynamic/13.0/sm_75"]["outcome"] == "pass"


def test_sm80_instructions_refused_for_turing(run) -> None:
    cells = run.cells()
    unguarded = cells["marlin-sm75/runtime-guard/12.4/sm_75"]
    assert unguarded["outcome"] == "xfail"
    assert "requires .target sm_80 or higher" in unguarded["message"]
    assert unguarded["diagnosis"]["rule"] == "arch-feature-missing"
    assert cells["marlin-sm75/runtime-guard/12.4/sm_90a"]["outcome"] == "pass"
    assert cells["marlin-sm75/arch-guard/13.0/sm_75"]["outcome"] == "pass"
    thrown = cells["marlin-sm75/throw-guard/13.0/sm_90a"]
    assert thrown["outcome"] == "xfail" and thrown["diagnosis"]["rule"] == "device-exception"


def test_nvrtc_default_arch_differs_by_toolkit(run) -> None:
    cells = run.cells()
    old = cells["wmma-jitify/no-arch/12.4/sm_90a"]
    assert old["outcome"] == "xfail" and old["diagnosis"]["rule"] == "wmma-no-arch"
    assert cells["wmma-jitify/no-arch/13.0/sm_90a"]["outcome"] == "pass"
    assert cells["wmma-jitify/explicit-arch/12.4/sm_75"]["outcome"] == "pass"


def test_gpu_stages_are_skipped_not_passed_without_a_gpu(run) -> None:
    cell = run.cells()["wmma-jitify/explicit-arch/13.0/sm_90a"]
    # The build is inspected (its kernel is an entry of the module); load and run are not.
    assert cell["reached"] == "inspect"
    assert [s["status"] for s in cell["stages"]] == ["ok", "ok", "skipped"]
    assert "kernel 'wmma_16x16x16' is an entry of the module" in cell["stages"][1]["log"]


def test_cupy_cells_are_skips_with_the_reason(run) -> None:
    cell = run.cells()["wmma-jitify/cupy-nvrtc/13.0/sm_90a/cupy-14.2.0"]
    assert cell["outcome"] == "skip" and "driver" in cell["message"]


def test_results_json_follows_its_schema(run) -> None:
    schema = json.loads(resources.files("cudamatrix.record").joinpath(
        "schema/results.schema.json").read_text())
    jsonschema.validate(run.results, schema)
    toolkits = run.results["run"]["toolkits"]
    assert toolkits["12.4"]["packages"]["nvidia-cuda-nvrtc-cu12"].startswith("12.4.")
    assert toolkits["13.0"]["tool_versions"]["nvcc"].startswith("13.0.")


def test_junit_has_one_suite_per_case_and_a_testcase_per_cell(run) -> None:
    root = ET.parse(run.out / "junit.xml").getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"smem-oversize", "marlin-sm75", "wmma-jitify"}
    assert sum(len(s.findall("testcase")) for s in suites.values()) == len(run.results["cells"])
    skipped = [t for t in root.iter("testcase") if t.find("skipped") is not None]
    # A skip, and an expected failure (as pytest writes an xfail).
    assert len(skipped) == run.results["summary"]["skip"] + run.results["summary"]["xfail"]
    assert {t.find("skipped").get("type") for t in skipped} <= {None, "cudamatrix.xfail"}


def test_markdown_has_a_grid_row_per_variant_and_says_what_stopped_each_cell(run) -> None:
    text = (run.out / "COMPATIBILITY.md").read_text()
    grid = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    variants = {(c["case"], c["variant"], c["library"]) for c in run.results["cells"]}
    rows = [ln for ln in grid.splitlines() if ln.startswith("|`")]
    assert len(rows) == len(variants)
    assert any(ln.startswith("|`smem-oversize` static-0xc010|") for ln in rows), rows
    # A column per toolkit and arch: one symbol a table cell.
    header = next(ln for ln in grid.splitlines() if ln.startswith("| case · variant"))
    assert "sm_75 |" in header and "sm_90a |" in header, header
    # Each case folded, with what stopped its cells in the compiler's words.
    assert "<strong>smem-oversize</strong>" in text
    assert "nvrtcCompileProgram returned NVRTC_ERROR_COMPILATION" in text


def test_cells_are_saved_as_they_finish(run) -> None:
    saved = list((run.out / "cells").glob("*.json"))
    assert len(saved) == len(run.results["cells"])


def test_report_rewrites_from_results(run, run_cli, tmp_path: Path) -> None:
    again = run_cli("report", str(run.out / "results.json"), "--out", str(tmp_path))
    assert again.code == 0, again.output
    assert (tmp_path / "COMPATIBILITY.md").read_text() == \
        (run.out / "COMPATIBILITY.md").read_text()
