"""A hang is a verdict (issue 15): a cell stopped at its limit says which stage it was in
and where its Python stack was; a case may expect the hang (`outcome = "timeout"`), and an
unexpected one stays `error`. Real worker processes, a real watchdog, a real kill."""

from __future__ import annotations

from pathlib import Path

from conftest import cudamatrix, write_case

# A frontend whose compile blocks in a named function, as CuPy's Jitify warm-up does.
STUCK = '''
import time
from cudamatrix.stages.frontends import Frontend, register


def wait_for_headers(job):
    while True:
        time.sleep(0.1)


register(Frontend("stuck", compile=wait_for_headers, toolkit_free=True, cached=False))
'''

CASE = """
title = "a compile that never returns"
[[variant]]
name = "expected"
source = "k.cu"
frontend = "stuck"
timeout = 6
  [[variant.expect]]
  outcome = "timeout"
  stage = "compile"
  match = "in wait_for_headers"
[[variant]]
name = "elsewhere"
source = "k.cu"
frontend = "stuck"
timeout = 6
  [[variant.expect]]
  outcome = "timeout"
  match = "in _init_module"
[[variant]]
name = "unexpected"
source = "k.cu"
frontend = "stuck"
timeout = 6
"""


def test_a_hang_is_recorded_where_it_was_and_judged(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "stuck_frontend.py").write_text(STUCK)
    write_case(tmp_path / "c", "hang", CASE, {"k.cu": "// never compiled\n"})
    env = {"CUDAMATRIX_FRONTENDS": "stuck_frontend", "PYTHONPATH": str(tmp_path / "plugins")}
    run = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--case", "hang", "--arch",
                     "sm_80", out=tmp_path / "out", env=env, timeout=300)
    cells = run.cells()
    expected = cells["hang/expected/bundled/sm_80"]
    assert expected["outcome"] == "xfail", expected["message"]
    stage = expected["stages"][0]
    assert stage["status"] == "timeout" and stage["stage"] == "compile"
    assert stage["details"]["limit_s"] == 6
    # Stopped at its limit, not long after it (the wait was the limit plus 15 s).
    assert all(cell["seconds"] < 6 + 5 for cell in cells.values()), \
        {cell_id: cell["seconds"] for cell_id, cell in cells.items()}
    assert stage["details"]["stopped_in"].startswith("stuck_frontend.py:")
    assert "in wait_for_headers" in stage["message"]
    assert "most recent call first" in stage["log"]  # the whole stack is kept
    # Hung, but not where the case says: a fail, never a false xfail.
    elsewhere = cells["hang/elsewhere/bundled/sm_80"]
    assert elsewhere["outcome"] == "fail", elsewhere["message"]
    # No expectation of a hang: the tool's limit stopped it, an error as before.
    unexpected = cells["hang/unexpected/bundled/sm_80"]
    assert unexpected["outcome"] == "error", unexpected["message"]
    assert "wait_for_headers" in unexpected["message"]
    assert run.code == 1, run.output[-2000:]
