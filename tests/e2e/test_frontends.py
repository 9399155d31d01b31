"""One place per frontend (issue 12, point 1): a frontend written in one file of its own,
outside the package, named in $CUDAMATRIX_FRONTENDS, runs through the whole tool (plan,
its own job preparation, cell worker, compile cache, artifact check, reports) with
nothing else touched; the facts that once lived as names in the runner and the verdict
(compiles only on a GPU) are its own entries."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import cudamatrix, write_case

TOY = '''
"""A toy frontend: writes a PTX module of its own, as a real one would build one."""
import dataclasses
from cudamatrix.stages.compile.built import Build
from cudamatrix.stages.frontends import Frontend, register
from cudamatrix.stages.cell.result import StageResult


def prepare(job, context):
    """The run's side: an option the case did not give, recorded as a version too (the
    same in every run, so the compile cache still knows the job)."""
    context.versions["toy-prep"] = context.variant.name
    return dataclasses.replace(job, options={**job.options, "prepared_by": "the run"})


def build(job):
    ptx = job.work / "kernel.ptx"
    ptx.write_text(".version 8.0\\n.target sm_80\\n.address_size 64\\n"
                   ".visible .entry toy()\\n{\\n  ret;\\n}\\n")
    said = f"the toy frontend built it (prepared by {job.options['prepared_by']})"
    return Build(StageResult("compile", "ok", "", said), ptx, None)


register(Frontend("toy", compile=build, toolkit_free=True, prepare=prepare))
register(Frontend("toy-on-gpu", compile=build, toolkit_free=True, prepare=prepare,
                  needs_gpu_to_compile="the toy compiles through the driver"))
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
        [[variant]]
        name = "gpu"
        source = "k.toy"
        frontend = "toy-on-gpu"
        kernel = "toy"
    """, {"k.toy": "anything the toy frontend reads\n"})
    path = [str(tmp_path / "plugins"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {"CUDAMATRIX_FRONTENDS": "toy_frontend", "PYTHONPATH": os.pathsep.join(path)}
    run = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--case", "toy-case", "--arch",
                     "sm_80", out=tmp_path / "out", env=env)
    assert run.code == 0, run.output[-3000:]
    cell = run.cells()["toy-case/v/bundled/sm_80"]
    assert cell["outcome"] == "pass", cell["message"]
    # Prepared in the run's process, built in the cell's worker.
    assert cell["versions"]["toy-prep"] == "v"
    assert "the toy frontend built it (prepared by the run)" in cell["stages"][0]["log"]
    gpu = run.cells()["toy-case/gpu/bundled/sm_80"]
    assert gpu["outcome"] == "skip"
    assert gpu["message"].startswith("the toy compiles through the driver: no NVIDIA driver")
    again = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--case", "toy-case", "--arch",
                       "sm_80", out=tmp_path / "again", env=env)
    assert again.cells()["toy-case/v/bundled/sm_80"]["stages"][0]["details"]["cache"] == "hit"
    # Without the plugin the case's frontend is unknown: exit 2 naming the file.
    missing = cudamatrix("validate", "--corpus", str(tmp_path / "c"))
    assert missing.code == 2 and "frontend must be one of" in missing.output
