"""What a killed run or a damaged file leaves is never a traceback on every later run (issue
57, points 14-22): a 10^400 number in cell-timings.json, a damaged marker or download
record, a plan job whose args are null (shlex.split(None) read stdin), an unknown
$CUDAMATRIX_PROVIDER, a reader that closes stdout, a full stdout, and the `*.partial-<pid>`
stagings of processes no longer running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cudamatrix.common.files import read_marker, remove_leftovers
from cudamatrix.config.project import init_project
from cudamatrix.orchestrator.cell_timings import FILE, CellTimings


def _cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cudamatrix", *args], cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, **env}, stdin=subprocess.DEVNULL)


def test_an_overflowing_timing_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / FILE).write_text('{"a": 1' + "0" * 400 + ', "b": 2.5, "c": -1, "d": "x"}')
    assert CellTimings(tmp_path).seconds == {"b": 2.5}


def test_a_damaged_marker_reads_as_none(tmp_path: Path) -> None:
    marker = tmp_path / "marker.json"
    marker.write_text('{"requirements": ["nvidia-cuda-nvcc==13.0.*"')  # killed mid-write
    assert read_marker(marker) is None and read_marker(tmp_path / "absent") is None
    marker.write_text('{"a": 1}')
    assert read_marker(marker) == {"a": 1}


def test_leftovers_of_dead_processes_go_and_live_ones_stay(tmp_path: Path) -> None:
    target = tmp_path / "wheels-13.0"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / f"wheels-13.0.partial-{dead.pid}").mkdir()
    (tmp_path / f"wheels-13.0.partial-{dead.pid}" / "half.whl").write_bytes(b"x")
    (tmp_path / f"wheels-13.0.partial-{os.getpid()}").mkdir()
    remove_leftovers(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"wheels-13.0.partial-{os.getpid()}"]


def test_a_plan_job_without_its_args_is_one_line(tmp_path: Path) -> None:
    init_project(tmp_path)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"include": [{"name": "a", "artifact": "results-a",
                                             "label": "cpu", "args": None}]}))
    done = _cli("merge", "--plan", str(plan), "--out", str(tmp_path / "site"), cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(f"error: --plan {plan}: not a plan")
    assert "Traceback" not in done.stderr


def test_an_unknown_provider_variable_is_named(tmp_path: Path) -> None:
    init_project(tmp_path)
    done = _cli("run", "--no-gpu", cwd=tmp_path, CUDAMATRIX_PROVIDER="nosuch")
    assert done.returncode == 2
    assert done.stderr == ("error: $CUDAMATRIX_PROVIDER 'nosuch': no such provider (known: "
                           "auto, wheels, docker, host)\n")


def test_a_closed_or_full_stdout_is_no_traceback(tmp_path: Path) -> None:
    closed = subprocess.run(f"{sys.executable} -m cudamatrix schema case | head -c 10",
                            shell=True, capture_output=True, text=True, check=False)
    assert closed.stdout == '{\n  "$sche' and "Traceback" not in closed.stderr
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "cudamatrix", "schema", "project"],
                              stdout=full, stderr=subprocess.PIPE, text=True, check=False)
    assert done.returncode == 2 and done.stderr == (
        "error: cannot write the output (No space left on device)\n")
