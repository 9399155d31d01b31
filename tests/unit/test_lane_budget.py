"""`nox -s tests` says each lane's wall time beside its budget (issue 80, item 5): CI's
`.ci/run` must end within 30 minutes on 2 cores, and a lane that outgrows its share is to
be seen in the run that made it grow. Over budget is a loud line, never a failure."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_noxfile() -> ModuleType:
    """The repository's noxfile, by its path (it is no package's module)."""
    spec = importlib.util.spec_from_file_location("noxfile_lanes", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


noxfile = _load_noxfile()


class Failed(Exception):
    """What nox raises where a session's command exits non-zero."""


class Session:
    """The two things a lane asks of nox's session, done for real: its command run as a
    process (`pytest` as this Python's; a non-zero exit raised, as nox does), and the lines
    it says kept as nox prints them."""

    def __init__(self) -> None:
        self.logged: list[str] = []
        self.warned: list[str] = []

    def run(self, program: str, *args: str) -> None:
        command = [sys.executable, "-m", "pytest"] if program == "pytest" else [program]
        if subprocess.run([*command, *args], check=False, capture_output=True).returncode:
            raise Failed(" ".join([program, *args]))

    def log(self, line: str) -> None:
        self.logged.append(line)

    def warn(self, line: str) -> None:
        self.warned.append(line)


def test_a_lane_within_its_budget_says_its_time_beside_it() -> None:
    assert noxfile.lane_time_line("unit", 212.4) == "unit lane: 212 s (budget 300 s)"
    assert noxfile.lane_time_line("e2e", 1490) == "e2e lane: 1490 s (budget 1500 s)"


def test_a_lane_over_its_budget_says_so_loudly() -> None:
    line = noxfile.lane_time_line("e2e", 1820.0)
    assert line == "e2e lane: 1820 s (budget 1500 s) -- OVER BUDGET by 320 s"


def _lane(folder: Path, passes: bool) -> list[str]:
    """A lane of one real test, passing or not: pytest's arguments for it."""
    test = folder / "test_one.py"
    test.write_text(f"def test_one():\n    assert {passes}\n")
    return [str(test), "-q", "-p", "no:cacheprovider", "--rootdir", str(folder)]


def test_the_session_prints_the_lanes_time_as_it_ends(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    session = Session()
    noxfile._timed_lane(session, "unit", *_lane(tmp_path, passes=True))
    assert len(session.logged) == 1 and not session.warned, session.logged
    assert session.logged[0].startswith("unit lane: ")
    assert session.logged[0].endswith(" s (budget 300 s)")


def test_a_failing_lane_over_its_budget_still_says_its_time_loudly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane's own failure stands (raised as nox raises it) and its time is said: a
    failing lane's time is the one most worth seeing."""
    monkeypatch.setitem(noxfile.LANE_BUDGETS_S, "e2e", 0)
    session = Session()
    with pytest.raises(Failed):
        noxfile._timed_lane(session, "e2e", *_lane(tmp_path, passes=False))
    assert not session.logged and len(session.warned) == 1, session.warned
    assert session.warned[0].startswith("!!! e2e lane: ")
    assert "(budget 0 s) -- OVER BUDGET by " in session.warned[0]


def test_the_tests_session_times_both_lanes() -> None:
    """`nox -s tests` runs the unit lane and the e2e lane through the timed runner (a lane
    run another way would print no time)."""
    import inspect

    source = inspect.getsource(noxfile.tests)
    assert "_unit(session)" in source and "_e2e(session)" in source
    assert '_timed_lane(session, "unit", "tests/unit", *UNIT_WORKERS' \
        in inspect.getsource(noxfile._unit)
    assert '_timed_lane(session, "e2e"' in inspect.getsource(noxfile._e2e)
