"""`cudamatrix report --rejudge`: an expectation found wrong by a run (on a GPU machine
long given back) is corrected in the case file, and the recorded stages are judged
again without compiling or running anything."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import cudamatrix, write_case

CASE = """
title = "a kernel with a typo"
[[variant]]
name = "v"
source = "bad.cu"
frontend = "nvrtc"
  [[variant.expect]]
  outcome = "{outcome}"
  {extra}
"""
SOURCE = 'extern "C" __global__ void k(float* x) { x[0] = undefined_name; }\n'


def test_recorded_stages_are_judged_again_against_the_corrected_case(tmp_path: Path) -> None:
    corpus = tmp_path / "cases"
    write_case(corpus, "typo", CASE.format(outcome="pass", extra=""), {"bad.cu": SOURCE})
    run = cudamatrix("run", "--corpus", str(corpus), "--toolkit", "13.0", "--arch", "sm_80",
                     out=tmp_path / "run", cwd=tmp_path)
    cell = run.cells()["typo/v/13.0/sm_80"]
    assert run.code == 1 and cell["outcome"] == "fail", cell["message"]
    # The expectation was wrong: the case is corrected, nothing is compiled again.
    (corpus / "typo" / "case.toml").write_text(CASE.format(
        outcome="fail", extra="stage = \"compile\"\n  match = 'identifier \"undefined_name\"'"))
    (corpus / "typo" / "bad.cu").write_text("this file would not even parse now\n")
    again = cudamatrix("report", str(tmp_path / "run" / "results.json"), "--rejudge",
                       "--corpus", str(corpus), out=None, cwd=tmp_path)
    assert again.code == 2 and "--out" in again.output  # where to write is asked for
    again = cudamatrix("report", str(tmp_path / "run" / "results.json"), "--rejudge",
                       "--corpus", str(corpus), "--out", str(tmp_path / "judged"),
                       cwd=tmp_path)
    assert again.code == 0, again.output[-2000:]
    judged = json.loads((tmp_path / "judged" / "results.json").read_text())["cells"][0]
    assert judged["outcome"] == "xfail"
    assert judged["expected"] == "fail at compile matching /identifier \"undefined_name\"/"
    assert judged["stages"] == cell["stages"]  # the same evidence, judged again
    # A cell whose case is gone cannot be judged: said, exit 2.
    write_case(tmp_path / "other", "other", CASE.format(outcome="pass", extra=""),
               {"bad.cu": SOURCE})
    gone = cudamatrix("report", str(tmp_path / "run" / "results.json"), "--rejudge",
                      "--corpus", str(tmp_path / "other"), "--out", str(tmp_path / "x"),
                      cwd=tmp_path)
    assert gone.code == 2 and "typo/v/13.0/sm_80 has no case 'typo'" in gone.output
