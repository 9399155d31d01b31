"""A cell's processes get their environment from one function, credentials out (issue 79,
break 5): a build that printed its environment put the index token of PIP_INDEX_URL into
results.json, the cell files, every report and the console.

Three parts: the function itself (stages/cell/cell_environment.py); a real build cell
whose command prints its environment, run with a token in the run's environment; and a
walk of every module under stages/, orchestrator/ and providers/ that fails where a
process is started with an environment the function did not make, save the tool's own
preparations listed below with their reasons."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

import cudamatrix
from cudamatrix.common import recorded
from cudamatrix.orchestrator.compile_cache import COMPILER_ENVIRONMENT
from cudamatrix.orchestrator.executors.local import worker_env
from cudamatrix.stages.cell.cell_environment import cell_environment
from cudamatrix.stages.cell.environment import Environment
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.cell.specs import BuildSetting, BuildSpec
from cudamatrix.stages.frontends.build_run import build

# The package as imported (the source tree a test run puts first on the path).
PACKAGE = Path(cudamatrix.__file__).resolve().parent
TOKEN = "s3cr3t-t0ken-79"
INDEX = f"https://user:{TOKEN}@127.0.0.1:9/simple"


def test_credentials_are_out_and_what_builds_need_is_kept() -> None:
    run = {"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "C", "CUDA_HOME": "/cuda",
           "PYTHONPATH": "/src", "PIP_INDEX_URL": INDEX,
           "PIP_EXTRA_INDEX_URL": f"https://{TOKEN}@a.example/simple https://b.example/simple",
           "PIP_TRUSTED_HOST": "a.example", "PIP_PASSWORD": TOKEN, "PIP_CLIENT_CERT": "/k.pem",
           "GITHUB_TOKEN": TOKEN, "ACTIONS_RUNTIME_TOKEN": TOKEN, "AWS_SECRET_ACCESS_KEY": TOKEN,
           "NETRC": "/home/u/.netrc", "SSH_AUTH_SOCK": "/tmp/agent", "CUDAMATRIX_TOKEN": TOKEN,
           "HTTPS_PROXY": f"http://me:{TOKEN}@proxy:3128", "LD_PRELOAD": "/x.so",
           "CMAKE_GENERATOR": "Ninja"}
    env = cell_environment({"CUDAARCHS": "90", "HF_TOKEN": TOKEN}, inherited=run)
    assert TOKEN not in json.dumps(env)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "C", "CUDA_HOME": "/cuda",
                   "PYTHONPATH": "/src", "PIP_INDEX_URL": "https://127.0.0.1:9/simple",
                   "PIP_EXTRA_INDEX_URL": "https://a.example/simple https://b.example/simple",
                   "PIP_TRUSTED_HOST": "a.example", "HTTPS_PROXY": "http://proxy:3128",
                   "CUDAARCHS": "90"}


def test_what_a_compile_key_hashes_reaches_the_compiler() -> None:
    """The variables the compile cache keys (a compiler reads them) are handed on: a
    compile the key says was made with them was made with them."""
    run = {name: f"/{name.lower()}" for name in COMPILER_ENVIRONMENT}
    assert cell_environment(inherited=run) == run


def test_a_workers_environment_is_its_own_cell_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a worker, a tool run gets the worker's environment back whole (nothing the
    tool set for it is lost), and no credential of the run's."""
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    env = worker_env(Environment("13.0", "host", "/cuda", nvrtc="/cuda/lib64/libnvrtc.so",
                                 library_dirs=("/cuda/lib64",)))
    assert TOKEN not in json.dumps(env)
    assert env["CUDA_CACHE_DISABLE"] == "1" and env["CUDAMATRIX_PRELOAD"]
    assert cell_environment(inherited=env) == env


def _build_job(tmp_path: Path, command: str) -> Job:
    project = tmp_path / "project"
    project.mkdir()
    return Job(cell_id="leak/env/13.0/sm_90", arch="sm_90", source=str(project),
               frontend="build", workdir=str(tmp_path / "work"), timeout=60,
               build=BuildSpec(commands=(command,), project=None, outputs=("out.so",), test=None,
                             requires=(), env=()),
               build_setting=BuildSetting(str(project), "project", (), (), ""))


def test_a_build_that_prints_its_environment_records_no_credential(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's reproduction, in the build frontend's own compile: the build's command
    prints its environment, then the index URL, and fails, so its log and its decisive
    line are recorded. The index is handed on without its credentials (a build's pip asks
    the same index, never PyPI instead); the token variable is not handed on at all."""
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    monkeypatch.setenv("MY_TOKEN", TOKEN)
    job = _build_job(tmp_path, "sh -c 'env; echo token=$MY_TOKEN; "
                               "echo index=$PIP_INDEX_URL >&2; exit 1'")
    job.work.mkdir(parents=True)
    stage = build(job)
    assert stage.status == "failed"
    assert stage.message == "index=https://127.0.0.1:9/simple"
    assert "token=\n" in stage.log + "\n"
    assert TOKEN not in json.dumps(stage.to_dict())


def test_every_stage_record_masks_a_credential_a_process_printed() -> None:
    """The one recorded-log filter: a stage record masks a URL's userinfo in its message,
    log, accident and details as it is made (and as a record is read back), so every report
    format and the console, all read from it, show none."""
    said = f"pip: {INDEX} refused"
    stage = StageResult("compile", "failed", said, f"log\n{said}", details={
        "warnings": [said], "nested": {"text": said, "n": 1}}, accident=said)
    recorded = json.dumps(stage.to_dict())
    assert TOKEN not in recorded and "https://***@127.0.0.1:9/simple" in recorded
    old = json.loads(recorded.replace("***", f"user:{TOKEN}"))
    assert TOKEN not in json.dumps(StageResult.from_dict(old).to_dict())
    plain = {"modules": [{"file": "a.so"}]}
    assert StageResult("inspect", "ok", details=plain).details is plain


# --- Every process a cell starts gets the cell environment --------------------------------

# The process starters a module may call, by module and name.
_STARTERS = {"subprocess": {"run", "Popen", "call", "check_call", "check_output"},
             "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
             "pty": {"spawn"},
             # The tool's own process starters (a preparation: its own session, killed with
             # the run), which start what they are given like subprocess.
             "interruption": {"run_preparation", "preparation_process"}}
_OS_STARTERS = ("exec", "spawn", "posix_spawn", "system", "popen")
_SCANNED = ("stages", "orchestrator", "providers")

# The processes that do not get the cell environment, by module and function, and why:
# the tool's own work, which a cell's code never reaches.
ALLOWED = {
    "providers/docker.py:ensure_base_image":
        "tar packs the base image's folder, which the tool made, for docker: no cell's "
        "code runs",
    "providers/clang_cuda.py:find_clang":
        "clang --version, asked by the run while it prepares a toolkit: only the version "
        "number matched in its answer is kept",
    "providers/host_compiler.py:_major":
        "gcc -dumpversion, asked by the run: only an integer of its answer is kept",
    "providers/host_compiler.py:installed_compiler":
        "gcc -dumpfullversion, as _major: only the version matched in it is kept",
    "providers/debian.py:prepare_debian_nvcc":
        "Debian's nvcc --version, asked once as the tool unpacks it: only the matched "
        "version is kept",
    "providers/host.py:host_toolkit_version":
        "a host toolkit's nvcc/ptxas --version: only the matched release is kept",
    "stages/binaries/facts.py:_run_bounded":
        "cuobjdump listing a file's modules: stages/binaries imports no cell type (a file's "
        "facts are read without a cell's stages), and in a cell it inherits its worker's "
        "environment, made by cell_environment (orchestrator/executors/local.py)",
    "providers/wheel_index.py:extract_downloaded":
        "pip downloading a wheel whose members the tool reads: the tool's own fetch, which "
        "may need the index's credentials; nothing of the wheel runs",
    "providers/wheels.py:run_pip":
        "pip installing a toolkit's or a library's wheels: the tool's own preparation, "
        "which may need the index's credentials; a library built from its sdist runs its "
        "setup.py here (docs/security.md: build cases and sources are trusted code)",
    "providers/debian.py:unpack_once":
        "dpkg-deb unpacking a .deb whose bytes the signed index vouched for: no maintainer "
        "script runs with -x",
    "stages/binaries/inputs.py:download":
        "pip downloading a wheel `cudamatrix audit` was named: the tool's own fetch, which "
        "may need the index's credentials; no cell runs",
}


def _last(module: str | None) -> str:
    """A module's last name (`..common.interruption` is `interruption`)."""
    return (module or "").rpartition(".")[2]


def _starts_process(call: ast.Call, imported: dict[str, str],
                    modules: dict[str, str] | None = None) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        module, name = (modules or {}).get(func.value.id, func.value.id), func.attr
    elif isinstance(func, ast.Name) and func.id in imported:
        module, name = imported[func.id], func.id
    else:
        return False
    if module == "os":
        return name.startswith(_OS_STARTERS)
    return name in _STARTERS.get(module, set())


class _Function:
    """One function's parameters and assignments: what a name handed as `env=` is."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef | None,
                 makers: set[str]) -> None:
        self.makers = makers
        self.annotated: dict[str, str] = {}
        self.assigned: dict[str, list[ast.expr]] = {}
        if node is None:
            return
        arguments = node.args
        for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            if argument.annotation is not None:
                self.annotated[argument.arg] = ast.unparse(argument.annotation)
        for inner in ast.walk(node):
            if isinstance(inner, ast.Assign):
                for target in inner.targets:
                    if isinstance(target, ast.Name):
                        self.assigned.setdefault(target.id, []).append(inner.value)
            elif isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                self.annotated[inner.target.id] = ast.unparse(inner.annotation)
                if inner.value is not None:
                    self.assigned.setdefault(inner.target.id, []).append(inner.value)

    def made_by_the_function(self, value: ast.expr, seen: frozenset[str] = frozenset(),
                             not_none: str = "") -> bool:
        """Whether `value` is a cell environment: the function's answer (or a function's
        whose declared answer is one), a parameter or a variable declared as one (and not
        None: a process handed None inherits the run's environment), or a name every
        assignment of which is one of these. `not_none`: a name known not to be None here
        (`env if env is not None else ...`)."""
        if isinstance(value, ast.Call):
            func = value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            return name in self.makers
        if isinstance(value, ast.IfExp):
            test = value.test
            checked = (test.left.id if isinstance(test, ast.Compare)
                       and isinstance(test.left, ast.Name)
                       and isinstance(test.ops[0], ast.IsNot)
                       and ast.unparse(test.comparators[0]) == "None" else "")
            return (self.made_by_the_function(value.body, seen, checked)
                    and self.made_by_the_function(value.orelse, seen))
        if isinstance(value, ast.Name) and value.id not in seen:
            annotation = self.annotated.get(value.id, "")
            if "CellEnvironment" in annotation and (
                    value.id == not_none or "None" not in annotation):
                return True
            assigned = self.assigned.get(value.id, [])
            return bool(assigned) and all(
                self.made_by_the_function(v, seen | {value.id}) for v in assigned)
        return False


def _makers(trees: dict[str, ast.Module]) -> set[str]:
    """`cell_environment` and every function of the package declared to answer a
    `CellEnvironment` (mypy --strict holds them to it)."""
    found = {"cell_environment"}
    for tree in trees.values():
        for node in ast.walk(tree):
            if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns
                    and ast.unparse(node.returns) == "CellEnvironment"):
                found.add(node.name)
    return found


def _parents(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _enclosing(node: ast.AST, parents: dict[ast.AST, ast.AST]
               ) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


def processes_without_the_cell_environment(root: Path = PACKAGE) -> list[str]:
    """Every process start under stages/, orchestrator/ and providers/ whose environment is
    not the cell environment, as `module:function: line`, the allowed ones left out."""
    trees = {str(path.relative_to(root)): ast.parse(path.read_text(), str(path))
             for package in _SCANNED for path in sorted((root / package).rglob("*.py"))}
    makers = _makers({k: v for k, v in trees.items()})
    found = []
    for module, tree in trees.items():
        imported = {alias.asname or alias.name: _last(node.module) for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom)
                    and _last(node.module) in (*_STARTERS, "os") for alias in node.names}
        # A module imported under another name (`import subprocess as sp`) is that module.
        modules = {alias.asname: alias.name for node in ast.walk(tree)
                   if isinstance(node, ast.Import) for alias in node.names
                   if alias.asname and alias.name in (*_STARTERS, "os")}
        parents = _parents(tree)
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call) or not _starts_process(call, imported,
                                                                         modules):
                continue
            function = _enclosing(call, parents)
            where = f"{module}:{function.name if function else '<module>'}"
            env = next((k.value for k in call.keywords if k.arg == "env"), None)
            if env is not None and _Function(function, makers).made_by_the_function(env):
                continue
            if where not in ALLOWED:
                found.append(f"{where}: line {call.lineno}: {ast.unparse(call)[:100]}")
    return found


def test_every_process_a_cell_starts_gets_the_cell_environment() -> None:
    assert processes_without_the_cell_environment() == []


def test_a_process_started_with_the_runs_environment_is_found(tmp_path: Path) -> None:
    """The walk finds the bypasses it is there for: the run's environment handed on, a
    copy of it with a variable added, none at all, one that may be None."""
    folder = tmp_path / "stages" / "frontends"
    folder.mkdir(parents=True)
    (tmp_path / "orchestrator").mkdir()
    (tmp_path / "providers").mkdir()
    (folder / "bypass.py").write_text(
        "import os, subprocess\n"
        "from subprocess import Popen\n"
        "from x import cell_environment, CellEnvironment\n"
        "def whole():\n    subprocess.run(['env'], env=os.environ)\n"
        "def copied():\n    env = {**os.environ, 'A': '1'}\n    Popen(['env'], env=env)\n"
        "def inherited():\n    subprocess.check_output(['env'])\n"
        "def maybe(given: CellEnvironment | None):\n    subprocess.run(['env'], env=given)\n"
        "import subprocess as sp\n"
        "from ..common.interruption import run_preparation\n"
        "def aliased():\n    sp.run(['env'])\n"
        "def prepared():\n    run_preparation(['nvcc', '--version'])\n"
        "def shell():\n    os.system('env')\n"
        "def fine(given: CellEnvironment, maybe: CellEnvironment | None):\n"
        "    env = cell_environment({'A': '1'})\n    subprocess.run(['env'], env=env)\n"
        "    subprocess.run(['env'], env=given)\n"
        "    subprocess.run(['env'], env=maybe if maybe is not None else cell_environment())\n")
    found = processes_without_the_cell_environment(tmp_path)
    assert [f.split(": line")[0] for f in found] == [
        "stages/frontends/bypass.py:whole", "stages/frontends/bypass.py:copied",
        "stages/frontends/bypass.py:inherited", "stages/frontends/bypass.py:maybe",
        "stages/frontends/bypass.py:aliased", "stages/frontends/bypass.py:prepared",
        "stages/frontends/bypass.py:shell"]


def test_every_allowed_process_is_still_there() -> None:
    """An entry whose function no longer starts a process is removed, not kept as a blank
    permission."""
    trees = {str(p.relative_to(PACKAGE)): ast.parse(p.read_text())
             for package in _SCANNED for p in (PACKAGE / package).rglob("*.py")}
    functions = {f"{module}:{node.name}" for module, tree in trees.items()
                 for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
    assert sorted(set(ALLOWED) - functions) == []


def test_nothing_makes_a_cell_environment_but_its_function() -> None:
    """`CellEnvironment(...)` is called in its own module only: a cast elsewhere would
    hand any dict on as one."""
    made = [f"{p.relative_to(PACKAGE)}:{node.lineno}" for p in sorted(PACKAGE.rglob("*.py"))
            for node in ast.walk(ast.parse(p.read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "CellEnvironment"]
    assert [m.split(":")[0] for m in made] == ["stages/cell/cell_environment.py"]



def test_a_stage_record_nested_too_deep_is_kept_readable(tmp_path: Path) -> None:
    """A CuTe DSL case's report is what its script printed: nested 70 deep, the cell's
    record was one every reader refused (report, merge, --resume, --baseline); 10,000 deep
    was a RecursionError where the record was made."""
    for levels in (70, 10_000):
        deep: Any = "bottom"
        for _ in range(levels):
            deep = {"a": [deep]}
        stage = StageResult("run", "ok", details={"report": deep})
        path = tmp_path / f"stage-{levels}.json"
        path.write_text(json.dumps({"cells": [{"stages": [stage.to_dict()]}]}))
        read = recorded.read_json(path)
        assert "not kept" in json.dumps(read)
