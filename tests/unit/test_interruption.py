"""A run's preparation processes, which the run alone stops (common/interruption.py): a
terminal's Ctrl-C signals the run's whole group, and a pip that died of it first was taken
for the environment's failure, its cells saved as errors."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from cudamatrix.common import interruption

SLEEP = [sys.executable, "-c", "import os, time; print(os.getsid(0), flush=True); "
         "time.sleep(60)"]


@pytest.fixture(autouse=True)
def a_fresh_run() -> Iterator[None]:
    interruption.start_run()
    yield
    interruption.start_run()


def test_a_preparation_runs_in_a_session_of_its_own() -> None:
    with interruption.preparation_process(SLEEP, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None
        assert int(child.stdout.readline()) == child.pid != os.getsid(0)
        child.kill()


def test_an_interrupted_run_stops_its_preparations_and_takes_none_for_a_failure() -> None:
    outcome: list[object] = []

    def prepare() -> None:
        try:
            outcome.append(interruption.run_preparation(SLEEP, timeout=60))
        except KeyboardInterrupt:
            outcome.append("interrupted")

    preparing = threading.Thread(target=prepare)
    preparing.start()
    time.sleep(0.5)
    started = time.monotonic()
    interruption.interrupt()
    interruption.stop_preparations()
    preparing.join(10)
    assert outcome == ["interrupted"] and time.monotonic() - started < 5
    # None starts once the run is interrupted.
    with pytest.raises(KeyboardInterrupt):
        interruption.run_preparation([sys.executable, "-c", "pass"])


def test_an_uninterrupted_preparation_says_what_it_did() -> None:
    done = interruption.run_preparation([sys.executable, "-c", "import sys; print('out'); "
                                         "sys.exit('err')"])
    assert (done.returncode, done.stdout, done.stderr) == (1, "out\n", "err\n")
    with pytest.raises(subprocess.TimeoutExpired):
        interruption.run_preparation(SLEEP, timeout=0.5)


def test_a_preparation_dies_with_its_run() -> None:
    """In a session of its own, a preparation no longer gets the signal that kills the run
    with its group (a closed terminal, a final SIGKILL): it is killed with the run."""
    run = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys\n"
         "from cudamatrix.common.interruption import preparation_process\n"
         f"with preparation_process({SLEEP!r}, stdout=subprocess.PIPE, text=True) as p:\n"
         "    print(p.stdout.readline().strip(), flush=True)\n"
         "    p.wait()\n"], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    child = int(run.stdout.readline())
    run.kill()
    run.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        raise AssertionError("the preparation outlived its run")


def test_a_missing_program_is_said_as_the_shell_says_it() -> None:
    done = interruption.run_preparation(["no-such-program-here", "--version"])
    assert done.returncode == 127
    assert done.stderr == "no-such-program-here: No such file or directory\n"
