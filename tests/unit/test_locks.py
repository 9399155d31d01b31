"""A cache folder another process is preparing is waited for, said once with who holds it,
and for a bounded time; the --out lock refuses at once naming its holder (issue 50: of the
two lock helpers, one had no timeout and no "waiting for pid N" line)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudamatrix.common.locks import LockHeld, exclusive_lock, folder_lock
from cudamatrix.errors import EnvironmentUnavailable

HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from cudamatrix.common.locks import folder_lock
    with folder_lock(Path(sys.argv[1])):
        print("held", flush=True)
        time.sleep(60)
""")


def test_a_held_folder_is_waited_for_said_and_given_up_on(tmp_path: Path) -> None:
    target = tmp_path / "toolkits" / "wheels-13.0"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(target)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        said: list[str] = []
        with pytest.raises(EnvironmentUnavailable, match=rf"pid {holder.pid} on .* held it "
                                                          r"past 0 s"), \
                folder_lock(target, timeout_s=0.3, say=said.append):
            pass
        assert said == [f"waiting for {target}: pid {holder.pid} on "
                        f"{said[0].rsplit(' on ', 1)[1]}"]
        assert said[0].endswith("is preparing it")
    finally:
        holder.kill()
        holder.wait()
    with folder_lock(target, timeout_s=5, say=said.append):  # its holder gone: at once
        pass
    assert len(said) == 1


def test_the_out_lock_refuses_at_once_naming_its_holder(tmp_path: Path) -> None:
    first = exclusive_lock(tmp_path / ".cudamatrix.lock")
    try:
        code = ("import sys; from pathlib import Path; from cudamatrix.common.locks import "
                "exclusive_lock, LockHeld\ntry:\n    exclusive_lock(Path(sys.argv[1]))\n"
                "except LockHeld as held:\n    print(held)")
        said = subprocess.run([sys.executable, "-c", code, str(tmp_path / ".cudamatrix.lock")],
                              capture_output=True, text=True, check=True).stdout
        assert said.startswith(f"pid {__import__('os').getpid()} on ")
    finally:
        first.close()
    exclusive_lock(tmp_path / ".cudamatrix.lock").close()
    assert LockHeld.__doc__


def test_a_lock_file_is_never_opened_through_a_link_or_as_a_fifo(tmp_path: Path) -> None:
    """Issue 57, point 5: a link where the lock file goes truncated its target; a FIFO
    there was a traceback (or a hang). Each is one line naming the file, the target kept."""
    import os

    from cudamatrix.common.locks import exclusive_lock, folder_lock
    from cudamatrix.errors import UserError

    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    (tmp_path / "toolkit.lock").symlink_to(precious)
    with pytest.raises(UserError, match=r"toolkit\.lock: cannot be used as a lock file \(a link"), \
            folder_lock(tmp_path / "toolkit"):
        pass
    assert precious.read_text() == "keep me\n"
    os.mkfifo(tmp_path / ".cudamatrix.lock")
    with pytest.raises(UserError, match="not a regular file"):
        exclusive_lock(tmp_path / ".cudamatrix.lock")


def test_a_forged_holder_is_not_named_as_one(tmp_path: Path) -> None:
    """Issue 57, point 13: the waiting line names the pid the file holds only where such a
    process runs; its advice never is "remove the lock file"."""
    import platform

    from cudamatrix.common.locks import _holder, _open_lock

    lock = tmp_path / "x.lock"
    lock.write_text(f"pid 99999999 on {platform.node()}")
    with _open_lock(lock) as handle:
        assert _holder(handle) == ("another process (its lock file names pid 99999999, "
                                   "not running)")
    lock.write_text("pid 1; rm -rf / on \n\x1b[2J")
    with _open_lock(lock) as handle:
        assert _holder(handle) == "another process"


def test_a_lock_wait_ends_with_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 57, point 13: the wait for a held cache folder ignored --run-timeout (an hour);
    it ends with the run, whichever comes first, and says so."""
    import time

    from cudamatrix.common.locks import RUN_DEADLINE_ENV

    target = tmp_path / "toolkits" / "wheels-13.0"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(target)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setenv(RUN_DEADLINE_ENV, f"{time.time() + 0.5:.3f}")
        with pytest.raises(EnvironmentUnavailable, match=r"held it past the run's "
                                                          r"--run-timeout"), \
                folder_lock(target, say=lambda text: None):
            pass
    finally:
        holder.kill()
        holder.wait()


# Another tool holding a cudamatrix lock file with flock, writing nothing into it.
FLOCK_ONLY = textwrap.dedent("""
    import fcntl, sys, time
    with open(sys.argv[1], "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        print("held", flush=True)
        time.sleep(60)
""")


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="Linux says holders in /proc/locks")
def test_the_holder_named_is_the_real_one_not_the_files(tmp_path: Path) -> None:
    """Issue 68, item 15: the lock file said `pid 1` (a stale or forged record) while
    another tool held the lock with flock; the holder named is the one Linux says holds
    it (/proc/locks, by the file's inode), the file's pid never."""
    import platform

    from cudamatrix.common.locks import _holder, _open_lock

    target = tmp_path / "toolkits" / "wheels-13.0"
    target.parent.mkdir(parents=True)
    lock = target.with_name(target.name + ".lock")
    lock.write_text(f"pid 1 on {platform.node()}")
    holder = subprocess.Popen([sys.executable, "-c", FLOCK_ONLY, str(lock)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        said: list[str] = []
        with pytest.raises(EnvironmentUnavailable, match=rf"pid {holder.pid} on "), \
                folder_lock(target, timeout_s=0.3, say=said.append):
            pass
        assert f"pid {holder.pid} on " in said[0] and "pid 1 " not in said[0]
        with pytest.raises(LockHeld, match=rf"pid {holder.pid} on "):
            exclusive_lock(lock)
    finally:
        holder.kill()
        holder.wait()
    with _open_lock(lock) as handle:  # nobody holds it now: the file's pid 1 is no holder
        assert "pid 1 on" not in _holder(handle)


def test_two_threads_of_one_run_wait_for_each_other_silently(tmp_path: Path) -> None:
    """Two of a run's environments sharing one folder (one install for cutlass_python and
    cutlass_torch) are two threads of one process: the second waits for the first and
    names nobody ("another process" was this run), then finds the folder made."""
    import threading

    target = tmp_path / "libraries" / "cutlass_python-3.5.0"
    inside, release = threading.Event(), threading.Event()
    said: list[str] = []
    order: list[str] = []

    def first() -> None:
        with folder_lock(target, say=said.append):
            order.append("first in")
            inside.set()
            release.wait(10)
            order.append("first out")

    holder = threading.Thread(target=first)
    holder.start()
    assert inside.wait(10)
    threading.Timer(0.5, release.set).start()
    with folder_lock(target, timeout_s=10, say=said.append):
        order.append("second in")
    holder.join(10)
    assert order == ["first in", "first out", "second in"] and said == []
    # Bounded all the same: a holder that outlasts the wait is said, naming this run.
    inside.clear()
    release.clear()
    holder = threading.Thread(target=first)
    holder.start()
    assert inside.wait(10)
    with pytest.raises(EnvironmentUnavailable, match="this run's own preparation"), \
            folder_lock(target, timeout_s=0.2, say=said.append):
        pass
    release.set()
    holder.join(10)
