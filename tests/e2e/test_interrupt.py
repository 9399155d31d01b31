"""A real run interrupted mid-way (SIGINT, SIGKILL) loses no finished cell, and resumes to the
same report as a run never interrupted."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO

# Compiled afresh each time (no compile cache), one cell at a time: slow enough to interrupt.
SELECTION = ("run", "--case", "smem-oversize", "--case", "marlin-sm75", "--toolkit", "12.4",
             "--toolkit", "13.0", "--jobs", "1", "--no-compile-cache")


def _start(out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "cudamatrix", *SELECTION, *extra,
                             "--out", str(out)], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "CI": "1", "CUDAMATRIX_PROVIDER": "wheels"})


def _finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    output, _ = process.communicate(timeout=900)
    return process.returncode, output


def _wait_for_cells(out: Path, count: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300
    while len(list((out / "cells").glob("*.json"))) < count:
        assert process.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _report_body(out: Path) -> str:
    """The Markdown below the counts (with the wall time), without the run's facts (the
    date), which fold away below the answer at a glance."""
    text = (out / "COMPATIBILITY.md").read_text()
    return re.sub(r"<details><summary>The run:.*?</details>", "", text[text.index("\n## "):],
                  flags=re.S)


def _verdicts(out: Path) -> dict[str, tuple[str, str, str]]:
    cells = json.loads((out / "results.json").read_text())["cells"]
    return {c["id"]: (c["outcome"], c["stage"], c["message"]) for c in cells}


def _workers_of(pid: int) -> list[int]:
    """Cell workers (and their compilers) that were started by run `pid`."""
    found = []
    needle = f"CUDAMATRIX_PARENT_PID={pid}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("whole")
    code, output = _finish(_start(out))
    assert code == 0, output
    return out


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=lambda s: signal.Signals(s).name)
def test_interrupted_run_resumes_to_the_same_report(uninterrupted: Path, tmp_path: Path,
                                                    how: int) -> None:
    total = len(_verdicts(uninterrupted))
    # The signal must land while cells remain: on a loaded machine the last cells can all
    # finish between the third cell's file and the signal (CI saw 48 of 48 kept, exit
    # 130: the interrupt came after the last cell). Such a try says nothing of resuming,
    # and is made again, at most twice more.
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        process = _start(out)
        _wait_for_cells(out, 3, process)
        process.send_signal(how)
        code, output = _finish(process)
        if how == signal.SIGKILL:
            assert code == -signal.SIGKILL
        else:
            assert code == 130, output
            assert "interrupted: finished cells are kept" in output and "--resume" in output
        kept = sorted((out / "cells").glob("*.json"))
        if len(kept) < total:
            break
    assert 3 <= len(kept) < total
    for path in kept:  # every saved cell is whole: written atomically
        json.loads(path.read_text())

    code, output = _finish(_start(out, "--resume"))
    assert code == 0, output
    assert f"resuming: {len(kept)} of {total} cells already done" in output
    assert _verdicts(out) == _verdicts(uninterrupted)
    assert _report_body(out) == _report_body(uninterrupted)


def test_killed_run_takes_its_cell_workers_along(tmp_path: Path) -> None:
    """A SIGKILLed run cannot clean up; its in-flight workers and their children must not
    compile on, orphaned, into folders a resumed run reuses."""
    case = tmp_path / "cases" / "slow"
    case.mkdir(parents=True)
    # The case's script starts a child of its own, as a compiler driver would.
    (case / "slow.py").write_text(
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', 'import time; time.sleep(120)'])\n")
    (case / "case.toml").write_text(
        'title = "slow"\n[[variant]]\nname = "v"\nsource = "slow.py"\nfrontend = "cute-dsl"\n'
        'timeout = 200\nonly = { arch = "sm_90a" }\n')
    process = subprocess.Popen(
        [sys.executable, "-m", "cudamatrix", "run", "--corpus", str(tmp_path / "cases"),
         "--case", "slow", "--arch", "sm_90a", "--no-compile-cache",
         "--out", str(tmp_path / "out")],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "CI": "1", "CUDAMATRIX_PROVIDER": "wheels"})
    deadline = time.monotonic() + 120
    while len(_workers_of(process.pid)) < 3:  # worker, script, its child
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    process.kill()
    process.wait()
    # Each goes down by a chain of parent-death signals (run -> server -> cell -> its tools);
    # on a loaded 2-core CI machine with dockerd busy that chain once took over 10 s.
    deadline = time.monotonic() + 30
    while _workers_of(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _workers_of(process.pid)
    for pid in left:  # never leave them behind, even when the assertion fails
        os.kill(pid, signal.SIGKILL)
    assert left == [], "cell processes outlived the killed run"


def _processes_naming(text: str) -> list[int]:
    """Processes whose command line names `text` (a run's own cache folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_ctrl_c_while_an_environment_downloads_saves_no_error(tmp_path: Path) -> None:
    """A terminal's Ctrl-C (and `timeout`, and a cancelled CI job) signals the run's whole
    process group: pip, installing the run's toolkit, died of it first, and every cell
    waiting for that toolkit was saved as an error ("pip could not install ...") that
    --resume would keep. The run now stops its preparations itself, after marking itself
    interrupted: exit 130, no cell saved from the interrupt, no pip left behind."""
    index = socket.socket()  # connections are queued by the kernel and never answered
    index.bind(("127.0.0.1", 0))
    index.listen(64)
    cache, out = tmp_path / "cache", tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "cudamatrix", "run", "--case", "smem-oversize", "--toolkit",
         "13.0", "--arch", "sm_80", "--no-compile-cache", "--cache", str(cache),
         "--out", str(out)],
        cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,  # its own group, which the test signals as a terminal does
        env={**os.environ, "CI": "1", "CUDAMATRIX_PROVIDER": "wheels",
             "PIP_INDEX_URL": f"http://127.0.0.1:{index.getsockname()[1]}/simple/",
             "PIP_DEFAULT_TIMEOUT": "120", "PIP_RETRIES": "0"})
    try:
        deadline = time.monotonic() + 60
        while not [p for p in _processes_naming(str(cache)) if p != process.pid]:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(1.0)  # pip is waiting for the index
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        index.close()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, output
    assert "could not install" not in output and "interrupted:" in output
    saved = [json.loads(p.read_text()) for p in (out / "cells").glob("*.json")]
    assert [c["id"] for c in saved if c["outcome"] == "error"] == [], output
    deadline = time.monotonic() + 10
    while _processes_naming(str(cache)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_naming(str(cache)) == [], "a preparation outlived the interrupted run"
