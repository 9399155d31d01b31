"""A frontend, a toolkit provider, a command and a report format added from outside the
package (issue 50, point 5; issue 59, point 4 for the format): one plugin package,
installed as any package is (its module and its ``*.dist-info`` with ``entry_points.txt``
on the path), with nothing of cudamatrix touched; and a plugin that cannot be loaded, or
that takes a built-in's name, is one line and exit status 2."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import cudamatrix, write_case

PLUGIN = '''
"""toyplug: a frontend, a provider and a command of its own."""
import argparse

from cudamatrix.commands.command import Command
from cudamatrix.errors import Failure
from cudamatrix.providers.toolkits import ExecutorChoice
from cudamatrix.reports.formats import ReportFormat
from cudamatrix.stages.cell.environment import Environment
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.compile.built import Build
from cudamatrix.stages.frontends import Frontend


def _build(job):
    ptx = job.work / "kernel.ptx"
    ptx.write_text(".version 8.0\\n.target sm_80\\n.address_size 64\\n"
                   ".visible .entry toy()\\n{\\n  ret;\\n}\\n")
    said = f"built by toyplug with toolkit {job.env.toolkit} of provider {job.env.provider}"
    return Build(StageResult("compile", "ok", "", said), ptx, None)


FRONTEND = Frontend("toy", compile=_build)


class ToyToolkits:
    """Every toolkit, with nothing in it but what the toy frontend needs (nothing)."""

    name, local = "toy", True

    def __init__(self, setting):
        self.cache = setting.cache

    def toolkit(self, version):
        return Environment(toolkit=version, provider="toy", root=str(self.cache),
                           cuobjdump=str(self.cache / "cuobjdump"))

    def executor(self, site):
        return ExecutorChoice("local")

    def host_compiler(self, name):
        return Failure(f"the toy has no {name}")


def _hello(args, invocation):
    invocation.console.print(f"hello, {args.name}")
    return 0


HELLO = Command("hello", "say hello", lambda p: p.add_argument("--name", default="world"), _hello)

# A report of its own: one line a cell, written beside the built-ins' files.
CSV = ReportFormat("cells.csv", lambda run: "".join(
    f"{r.cell.id},{r.outcome},{r.stage}\\n" for r in run.results))
'''

ENTRY_POINTS = """
[cudamatrix.frontends]
toy = toyplug:FRONTEND

[cudamatrix.providers]
toy = toyplug:ToyToolkits

[cudamatrix.commands]
hello = toyplug:HELLO

[cudamatrix.reports]
csv = toyplug:CSV
"""


def _install(site: Path, entry_points: str, module: str = PLUGIN) -> dict[str, str]:
    """toyplug as pip would leave it: the module and its metadata, on the path."""
    site.mkdir(parents=True)
    (site / "toyplug.py").write_text(module)
    info = site / "toyplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    path = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(path)}


def test_a_frontend_a_provider_and_a_command_from_a_plugin_package(tmp_path: Path) -> None:
    env = _install(tmp_path / "site", ENTRY_POINTS)
    hello = cudamatrix("hello", "--name", "maintainer", env=env)
    assert hello.code == 0 and hello.output.strip() == "hello, maintainer", hello.output
    assert "hello" in cudamatrix("--help", env=env).output
    write_case(tmp_path / "c", "toy-case", """
        title = "a plugin's frontend on a plugin's toolkits"
        [[variant]]
        name = "v"
        source = "k.toy"
        frontend = "toy"
        kernel = "toy"
          [[variant.artifact]]
          in = "ptx"
          contains = '\\.entry toy'
    """, {"k.toy": "read by nobody\n"})
    run = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--toolkit", "12.4", "--arch",
                     "sm_80", "--provider", "toy", out=tmp_path / "out",
                     env={**env, "CUDAMATRIX_PROVIDER": "toy"})
    assert run.code == 0, run.output[-3000:]
    cell = run.cells()["toy-case/v/12.4/sm_80"]
    assert cell["outcome"] == "pass", cell["message"]
    assert "built by toyplug with toolkit 12.4 of provider toy" in cell["stages"][0]["log"]
    # Its report format, as a built-in's: a file of the run's.
    rows = (tmp_path / "out" / "cells.csv").read_text().splitlines()
    assert "toy-case/v/12.4/sm_80,pass,inspect" in rows and len(rows) == len(run.cells())
    # Without the plugin neither is known: named, exit 2.
    plain = cudamatrix("hello")
    assert plain.code == 2 and "invalid choice: 'hello'" in plain.output


def test_a_plugin_that_cannot_load_or_takes_a_built_in_name_is_one_line(tmp_path: Path
                                                                         ) -> None:
    broken = _install(tmp_path / "broken", "[cudamatrix.commands]\nhello = toyplug:HELLO\n",
                      module="raise RuntimeError('toyplug is broken')\n")
    said = cudamatrix("validate", env=broken)
    assert said.code == 2, said.output
    assert said.output.strip() == ("error: entry point cudamatrix.commands hello = "
                                   "toyplug:HELLO: cannot load it (RuntimeError: toyplug is "
                                   "broken)"), said.output
    taken = _install(tmp_path / "taken", "[cudamatrix.providers]\nwheels = toyplug:ToyToolkits\n")
    said = cudamatrix("run", "--provider", "wheels", "--corpus", str(tmp_path / "none"),
                      out=tmp_path / "out", env=taken)
    assert said.code == 2 and "'wheels' is a built-in name" in said.output, said.output
    assert "Traceback" not in said.output


RAISING = PLUGIN + '''

def _no_arguments(parser):
    raise RuntimeError("cannot make my arguments")


BROKEN = Command("broken", "never made", _no_arguments, _hello)
LOST = Frontend("lost", compile=_build, prepare="toyplug_missing_module:prepare")
'''


def test_a_plugin_raising_in_its_arguments_or_prepare_is_one_line(tmp_path: Path) -> None:
    """Issue 57, points 14-22: a plugin command whose arguments raise broke even `cudamatrix
    --version`; a frontend whose `prepare` names a missing module was a traceback."""
    env = _install(tmp_path / "site", "[cudamatrix.commands]\nbroken = toyplug:BROKEN\n"
                   "[cudamatrix.frontends]\nlost = toyplug:LOST\n", module=RAISING)
    version = cudamatrix("--version", env=env)
    assert version.code == 0 and "cudamatrix " in version.output, version.output
    assert "warning: command 'broken' left out: its arguments cannot be made (RuntimeError: " \
        "cannot make my arguments)" in version.output
    write_case(tmp_path / "c", "lost-case", """
        title = "a frontend whose prepare is lost"
        [[variant]]
        name = "v"
        source = "k.toy"
        frontend = "lost"
    """, {"k.toy": "x\n"})
    run = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--toolkit", "13.0", "--arch",
                     "sm_80", "--no-gpu", out=tmp_path / "out", env=env)
    assert run.code == 2, run.output[-2000:]
    assert "error: frontend 'lost': its prepare 'toyplug_missing_module:prepare' cannot be " \
        "loaded (ModuleNotFoundError" in run.output and "Traceback" not in run.output
