"""Issue 79, break 11: the tool's own cache records, damaged (a run killed as it wrote one,
a full disk, a hand's edit: truncated JSON, the wrong types, binary garbage), are made
again, never a traceback in list, plan or run: `libraries/torch-cuda.json` whose CUDA was
no version stopped every planning command (InvalidVersion), and a truncated
`cudamatrix-described.json` every run of that toolkit (JSONDecodeError). And every module
reads the files the tool keeps through the one reader that treats a damaged one as absent
(common/recorded.py), which a walk over the package's syntax keeps true."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.defaults import DEFAULT_MATRIX
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.torch_cuda import KEPT
from cudamatrix.providers import wheels
from cudamatrix.providers.release_headers import HEADERS_FORMAT, HEADERS_MARKER

SRC = REPO / "src" / "cudamatrix"
SCALE = REPO / "tests" / "data" / "torch-extension" / "scale"
METADATA = REPO / "tests" / "data" / "torch-metadata"

DAMAGED: dict[str, bytes] = {
    "truncated": b'{"2.5.1": {"cuda": "12.4", "sou',
    "binary": b"\x00\xff\xfe{\x80garbage",
    "a list": b"[1, 2]",
    "no version": b'{"2.5.1": {"cuda": "garbage", "source": "x"}}',
    "a number": b'{"2.5.1": {"cuda": 12.4}}',
    "too many parts": b'{"2.5.1": {"cuda": "1.2.3.4.5"}}',
    "an empty one": b'{"2.5.1": {"cuda": ""}}',
    "a list entry": b'{"2.5.1": ["x"]}',
}


def _project(root: Path) -> Path:
    """The scale case, torch 2.5.1 paired exactly with 12.4 and 12.8 (the pairing reads
    torch-cuda.json)."""
    shutil.copytree(SCALE, root / "cases" / "scale")
    (root / "cudamatrix.toml").write_text(
        'cases = ["cases"]\n\n[tiers.pr]\ntoolkit = ["12.4", "12.8"]\narch = ["sm_90"]\n'
        'torch = ["2.5.1"]\ntorch_pairing = "exact"\n')
    return root


def _cli(cwd: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CUDAMATRIX_CACHE": str(cache),
           "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_EXTRA_INDEX_URL": "",
           "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-m", "cudamatrix", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("command", [("list", "--json"), ("plan",)])
def test_a_damaged_torch_cuda_record_is_made_again(command: tuple[str, ...], tmp_path: Path
                                                   ) -> None:
    """Each damage is read as no answer: the release's METADATA kept beside its headers
    answers again (12.4), the record is remade with it, and the pairing plans as on a
    fresh cache."""
    root = _project(tmp_path / "p")
    cache = tmp_path / "cache"
    info = cache / "libraries" / "torch-2.5.1-headers" / "torch-2.5.1.dist-info"
    info.mkdir(parents=True)
    shutil.copy(METADATA / "torch-2.5.1.METADATA", info / "METADATA")
    # Every damage through list; plan, which reads the record the same way, by three.
    damages = DAMAGED if command[0] == "list" else {
        k: DAMAGED[k] for k in ("truncated", "binary", "no version")}
    for name, damage in damages.items():
        (cache / KEPT).write_bytes(damage)
        done = _cli(root, cache, *command)
        assert "Traceback" not in done.stderr, (name, done.stderr)
        assert done.returncode == 0, (name, done.stderr)
        if command[0] == "list":
            ruled_out = {c["toolkit"]: c["ruled_out"] for c in json.loads(done.stdout)}
            assert ruled_out["12.4"] is None, name
            assert "built with CUDA 12.4" in ruled_out["12.8"], (name, ruled_out)
        assert json.loads((cache / KEPT).read_text())["2.5.1"]["cuda"] == "12.4", name


def _toolkit_tree(cache: Path, toolkit: str) -> Path:
    """A wheels toolkit as a finished install leaves it (its two markers), without its
    wheels: describing it finds no tool, which is a description all the same."""
    matrix = load_matrix(DEFAULT_MATRIX)
    root = cache / "toolkits" / f"wheels-{toolkit}"
    root.mkdir(parents=True)
    (root / wheels.MARKER).write_text(json.dumps(
        {"requirements": matrix.wheel_requirements(toolkit), "with_deps": False}))
    (root / HEADERS_MARKER).write_text(json.dumps(
        {"format": HEADERS_FORMAT, "release": toolkit, "components": {}}))
    return root


def test_a_damaged_toolkit_description_is_made_again(tmp_path: Path) -> None:
    matrix = load_matrix(DEFAULT_MATRIX)
    root = _toolkit_tree(tmp_path, "13.0")
    fresh = wheels.prepare_toolkit(matrix, "13.0", tmp_path, InputLedger())
    described = root / wheels.DESCRIBED
    whole = json.loads(described.read_text())
    kept = {key: whole[key] for key in ("marker", "root", "reader")}
    for name, damage in {
        "truncated": described.read_bytes()[:40],
        "binary": b"\x00\xff\xfe{\x80garbage",
        "a list": b"[1, 2]",
        "an environment of the wrong type": json.dumps({**kept, "environment": "x"}).encode(),
        "an environment missing a field": json.dumps(
            {**kept, "environment": {"toolkit": "13.0"}}).encode(),
        "a field of the wrong type": json.dumps(
            {**kept, "environment": {**whole["environment"], "include_dirs": 5}}).encode(),
    }.items():
        described.write_bytes(damage)
        assert wheels.prepare_toolkit(matrix, "13.0", tmp_path, InputLedger()) == fresh, name
        assert json.loads(described.read_text()) == whole, name


# The reader every file the tool reads back as JSON goes through, and the few places that
# parse JSON that is no file (a process's answer on a pipe, an index's reply).
READER = "common/recorded.py"


def _reads_a_file(call: ast.Call) -> bool:
    """json.load(...) of anything, or json.loads(<...>.read_text() / .read_bytes())."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id == "json"):
        return False
    if func.attr == "load":
        return True
    if func.attr != "loads" or not call.args:
        return False
    return any(_reads_text(node) for node in ast.walk(call.args[0]))


def _reads_text(node: ast.AST) -> bool:
    """A file's text read: <...>.read_text(), .read_bytes(), open(p).read(), p.open().read()."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr in ("read_text", "read_bytes"):
        return True
    opened = node.func.value
    if node.func.attr != "read" or not isinstance(opened, ast.Call):
        return False
    return (isinstance(opened.func, ast.Name) and opened.func.id == "open") or (
        isinstance(opened.func, ast.Attribute) and opened.func.attr == "open")


def test_every_json_file_is_read_through_the_one_reader() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative == READER:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and _reads_a_file(node):
                found.append(f"{relative}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module == "json" and any(
                    alias.name in ("load", "loads") for alias in node.names):
                found.append(f"{relative}:{node.lineno}: from json import load(s)")
    assert not found, ("JSON files read outside common/recorded.py (read_json for a "
                       f"user's file, read_cache for the tool's own): {found}")


def test_the_walk_finds_what_it_looks_for() -> None:
    """The walk's own check: each way of reading a file is caught, a string is not."""
    caught = ["json.load(handle)", "json.loads(path.read_text())",
              "json.loads((root / NAME).read_bytes())", "json.loads(p.read_text().strip())",
              "json.loads(open(p).read())", "json.loads(p.open().read())"]
    passed = ["json.loads(line)", "json.loads(body.decode())", "json.dumps(x)"]
    for source in caught:
        assert _reads_a_file(ast.parse(source).body[0].value), source  # type: ignore[attr-defined]
    for source in passed:
        assert not _reads_a_file(ast.parse(source).body[0].value), source  # type: ignore[attr-defined]


def test_a_damaged_jitify_warm_up_record_is_warmed_again(tmp_path: Path) -> None:
    """The warm-up's record in the cache, truncated or without its seconds, was a
    JSONDecodeError or KeyError in every later CuPy cell: it is warmed up again."""
    from cudamatrix.orchestrator.cupy_warmup import DONE_FILE, JitifyWarmups
    from cudamatrix.stages.cell.environment import LibraryEnvironment
    from cudamatrix.stages.cell.job import Job
    from cudamatrix.stages.cell.result import StageResult

    warmed: list[Job] = []

    def warm(job: Job) -> list[StageResult]:
        warmed.append(job)
        (job.work / "cupy-cache").mkdir(exist_ok=True)
        return [StageResult("compile", "ok")]

    for number, damage in enumerate((b'{"seconds": 1', b'{"key": "x"}', b'{"seconds": NaN}',
                                     b"\x00\xff")):
        work = tmp_path / "out" / "artifacts" / f"c{number}"
        work.mkdir(parents=True)
        job = Job(cell_id=f"c{number}", arch="sm_90a", source="k.cu", frontend="cupy",
                  workdir=str(work), timeout=150, options={"jitify": True},
                  library=LibraryEnvironment("cupy", "14.2.0", "(this Python)"))
        folder = tmp_path / "cache" / "cupy-jitify" / JitifyWarmups.key(job)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / DONE_FILE).write_bytes(damage)
        warmups = JitifyWarmups(tmp_path / "cache", tmp_path / "out", 900, warm, print)
        seeded = warmups.prepare(job)
        assert isinstance(seeded, Job) and seeded.options["jitify_seed"] == str(folder)
        assert len(warmed) == number + 1, damage


def test_a_worker_that_left_damaged_stages_is_its_cells_error(tmp_path: Path) -> None:
    """A worker that exited 0 with a truncated result file (a full disk) was a
    JSONDecodeError in the run's thread: the cell's error now, said in one line."""
    from cudamatrix.orchestrator.executors.outcome import collect_stages
    from cudamatrix.stages.cell.files import RESULT_FILE
    from cudamatrix.stages.cell.job import Job

    job = Job(cell_id="c", arch="sm_90", source="k.cu", frontend="nvrtc",
              workdir=str(tmp_path), timeout=60)
    for damage in (b'[{"stage": "compile", "sta', b'[{"stage": 5}]', b"{}"):
        (tmp_path / RESULT_FILE).write_bytes(damage)
        stages = collect_stages(job, 0, "exited with status 0", "")
        assert [(s.status, s.message) for s in stages] == [
            ("error", f"cell worker left a damaged {RESULT_FILE}")], damage
