"""The run's --run-timeout bounds what the run's own process prepares and looks up (issue
79, break 7): with an index that never answers, pip preparing a toolkit and the
since-which-release look-up of a failed compile ran on for minutes past a 20 s limit, and
no results.json was written before CI cancelled the job. At the deadline each is stopped,
recorded as the limit's doing, and the run writes every record. The index here is a real
socket on 127.0.0.1 that takes connections and never answers."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO, SCALE_KERNEL, scale_case, write_case
from cudamatrix.common import bounded_fetch, interruption, package_index
from cudamatrix.errors import RunOutOfTime
from cudamatrix.providers.first_release import (
    SINCE_RELEASE_STOPPED,
    FirstReleases,
    with_first_release,
)
from cudamatrix.stages.cell.result import StageResult

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.fixture(autouse=True)
def a_fresh_run() -> Iterator[None]:
    interruption.start_run()
    yield
    interruption.end_run()
    interruption.start_run()


@pytest.fixture
def silent_index() -> Iterator[str]:
    """An index that accepts connections (the kernel queues them) and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/simple/"
    finally:
        server.close()


def test_the_deadline_stops_a_preparation_and_none_starts_after() -> None:
    interruption.start_run(1.0)
    started = time.monotonic()
    with pytest.raises(RunOutOfTime, match=r"the run's 1 s limit \(--run-timeout\)"):
        interruption.run_preparation(SLEEP, timeout=60)
    assert time.monotonic() - started < 5
    with pytest.raises(RunOutOfTime):
        interruption.run_preparation([sys.executable, "-c", "pass"])


def test_a_request_to_a_silent_index_ends_with_the_run(silent_index: str) -> None:
    interruption.start_run(1.5)
    started = time.monotonic()
    with pytest.raises(RunOutOfTime):
        package_index.get(silent_index + "nvidia-cuda-cccl/", timeout=60)
    assert time.monotonic() - started < 5


def test_the_since_release_look_up_stops_at_the_run_limit(silent_index: str,
                                                          tmp_path: Path) -> None:
    def headers(release: str) -> tuple[list[str], str]:  # as for_run's reads the index
        package_index.get(silent_index + f"nvidia-cuda-cccl/{release}", timeout=60)
        return [], release

    lookups = FirstReleases(["12.6", "12.8", "13.0"], headers, tmp_path / "cache")
    failed = StageResult("compile", "failed", "cannot open source file",
                         log='k.cu(1): error: cannot open source file "cuda/cmath"')
    interruption.start_run(1.5)
    started = time.monotonic()
    stages = with_first_release([failed], lookups, {}, "12.4")
    assert time.monotonic() - started < 5
    assert "--run-timeout" in str(stages[0].details[SINCE_RELEASE_STOPPED])
    assert "since_release" not in stages[0].details


def test_a_run_whose_toolkit_waits_on_a_silent_index_ends_on_time(silent_index: str,
                                                                  tmp_path: Path) -> None:
    """13.0's compilers are pip's wheels (12.4's nvcc may come from Debian's archive: not
    this index, and no network in this lane)."""
    write_case(tmp_path / "c", "one", scale_case(), {"k.cu": SCALE_KERNEL % "2.0f"})
    out = tmp_path / "out"
    limit = 8
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cudamatrix", "run", "--corpus", str(tmp_path / "c"),
         "--case", "one", "--toolkit", "13.0", "--arch", "sm_80", "--no-compile-cache",
         "--cache", str(tmp_path / "cache"), "--out", str(out), "--run-timeout", str(limit)],
        cwd=REPO, capture_output=True, text=True, timeout=180, check=False,
        env={**os.environ, "CI": "1", "CUDAMATRIX_PROVIDER": "wheels",
             "PIP_INDEX_URL": silent_index, "PIP_DEFAULT_TIMEOUT": "120",
             "PIP_RETRIES": "0"})
    took = time.monotonic() - started
    said = done.stdout + done.stderr
    assert took < limit + 15, said[-3000:]
    assert done.returncode == 1, said[-3000:]  # as a run out of time exits: cells erred
    assert "could not be prepared" not in said and "Traceback" not in said, said[-3000:]
    cells = json.loads((out / "results.json").read_text())["cells"]
    assert cells and all(c["outcome"] == "error" and "--run-timeout" in c["message"]
                         for c in cells), cells


@pytest.fixture
def dripping_source() -> Iterator[str]:
    """A source that answers at once, then a byte every 0.2 s for 20 s: each read returns
    well within any socket timeout, so only a deadline over the whole answer ends it."""
    class Drip(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            for _ in range(100):
                try:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.2)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/InRelease"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("how", ["fetch", "download"])
def test_an_answer_that_drips_ends_with_the_run(dripping_source: str, tmp_path: Path,
                                                how: str) -> None:
    """Before: the socket's timeout bounds each read, not the answer, and a source sending
    a byte at a time kept a fetch going 20 s past a 1 s --run-timeout."""
    interruption.start_run(1.0)
    started = time.monotonic()
    with pytest.raises(RunOutOfTime):
        if how == "fetch":
            bounded_fetch.fetch(dripping_source, 1 << 20, "a release file", 60)
        else:
            bounded_fetch.download(dripping_source, tmp_path / "got", 1 << 20, "a .deb", 60)
    assert time.monotonic() - started < 5
    assert not (tmp_path / "got").exists()
