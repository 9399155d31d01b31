"""A toolkit's download shows its progress in bytes (issue 56, point 9): pip's raw progress
lines become a line on stderr now and then; a pip that hangs without a word is stopped at
its limit; pip's own failure keeps its words (not the progress lines)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cudamatrix.providers import wheels

# A stand-in for pip's output with --progress-bar raw: what pip 24.1+ prints.
FAKE_PIP = """
import sys, time
print("Collecting nvidia-cuda-nvcc==13.0.88")
print("  Downloading nvidia_cuda_nvcc-13.0.88-py3-none-manylinux_2_27_x86_64.whl (60.0 MB)")
for done in range(0, 60_000_001, 6_000_000):
    print(f"Progress {done} of 60000000", flush=True)
print("Progress 1 of 2")  # a small file: not said
sys.exit(int(sys.argv[1]))
"""


def test_a_large_download_is_said_in_bytes(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wheels, "SAID_EVERY_S", 0.0)
    code, lines = wheels.run_pip([sys.executable, "-c", FAKE_PIP, "0"], 60, None)
    said = capsys.readouterr().err.splitlines()
    assert code == 0
    assert said[0] == ("downloading nvidia_cuda_nvcc-13.0.88-py3-none-manylinux_2_27_x86_64"
                       ".whl: 0 of 60 MB")
    assert said[-1].endswith(": 60 of 60 MB") and len(said) == 11
    assert not any(line.startswith("Progress ") for line in lines)
    failed, lines = wheels.run_pip([sys.executable, "-c", FAKE_PIP, "1"], 60, None)
    assert failed == 1 and lines[0] == "Collecting nvidia-cuda-nvcc==13.0.88"


def test_a_silent_hang_is_stopped_at_its_limit() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        wheels.run_pip([sys.executable, "-c", "import time; time.sleep(60)"], 1, None)


def test_an_older_pip_installs_quietly_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU image's pip 24.0 refused --progress-bar raw, and with it every install (found
    on the lent H100): raw progress only where pip has it."""
    import importlib.metadata

    for said, flags in (("24.0", ["--quiet"]), ("24.1", ["--progress-bar", "raw"]),
                        ("26.3", ["--progress-bar", "raw"])):
        monkeypatch.setattr(importlib.metadata, "version", lambda name, said=said: said)
        wheels.pip_progress.cache_clear()
        assert wheels.pip_progress() == flags
    wheels.pip_progress.cache_clear()
