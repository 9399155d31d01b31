"""The floor bench/ measures (issue 27, point 1): a compile's CPU seconds count the
compiler processes it waited for and the in-process compiler's own time, not the time it
sat waiting."""

from __future__ import annotations

import subprocess
import sys
import time

from cudamatrix.stages.runtime.pipeline import CompilerTime

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"


def test_a_compiler_processs_cpu_counts_and_waiting_does_not() -> None:
    with CompilerTime() as child:
        subprocess.run([sys.executable, "-c", BURN], check=True)
    assert 0.3 <= child.seconds < 2.0
    with CompilerTime() as idle:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.5)"], check=True)
        time.sleep(0.3)
    assert idle.seconds < 0.25


def test_an_in_process_compile_counts() -> None:
    with CompilerTime() as own:
        end = time.process_time() + 0.2
        while time.process_time() < end:
            pass
    assert own.seconds >= 0.2
