"""One place per frontend (issue 12, point 1): a frontend written in one file of its own,
outside the package, named in $CUDAMATRIX_FRONTENDS, runs through the whole tool (plan,
cell worker, compile cache, artifact check, reports) with nothing else touched."""

from __future__ import annotations

from pathlib import Path

from conftest import cudamatrix, write_case

TOY = '''
"""A toy frontend: writes a PTX module of its own, as a real one would build one."""
from cudamatrix.stages.compile import Build
from cudamatrix.stages.frontends import Frontend, register
from cudamatrix.stages.result import StageResult


def build(job):
    ptx = job.work / "kernel.ptx"
    ptx.write_text(".version 8.0\\n.target sm_80\\n.address_size 64\\n"
                   ".visible .entry toy()\\n{\\n  ret;\\n}\\n")
    return Build(StageResult("compile", "ok", "", "the toy frontend built it"), ptx, None)


register(Frontend("toy", compile=build, toolkit_free=True))
'''


def test_a_frontend_in_one_file_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "toy_frontend.py").write_text(TOY)
    write_case(tmp_path / "c", "toy-case", """
        title = "built by a frontend the tool does not ship"
        [[variant]]
        name = "v"
        source = "k.toy"
        frontend = "toy"
        kernel = "toy"
          [[variant.artifact]]
          in = "ptx"
          contains = '\\.entry toy'
    """, {"k.toy": "anything the toy frontend reads\n"})
    env = {"CUDAMATRIX_FRONTENDS": "toy_frontend", "PYTHONPATH": str(tmp_path / "plugins")}
    run = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--case", "toy-case", "--arch",
                     "sm_80", out=tmp_path / "out", env=env)
    assert run.code == 0, run.output[-3000:]
    cell = run.cells()["toy-case/v/bundled/sm_80"]
    assert cell["outcome"] == "pass", cell["message"]
    assert "the toy frontend built it" in cell["stages"][0]["log"]
    again = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--case", "toy-case", "--arch",
                       "sm_80", out=tmp_path / "again", env=env)
    assert again.cells()["toy-case/v/bundled/sm_80"]["stages"][0]["details"]["cache"] == "hit"
    # Without the plugin the case's frontend is unknown: exit 2 naming the file.
    missing = cudamatrix("validate", "--corpus", str(tmp_path / "c"))
    assert missing.code == 2 and "frontend must be one of" in missing.output
