"""Printed repro commands reproduce (issue 38): each unexpected cell's command, copied from
COMPATIBILITY.md and run in a shell at the project's root the report names, reruns that
one cell as the run ran it (its corpus, provider, toolkit, library version, options),
compiled again into a report folder of its own (issue 82), and gets the same outcome,
stage and message."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import cudamatrix, write_case

# Fails to compile where CCCL is older than 13.1, which the case does not expect.
NEEDS_CCCL_31 = """#include <cuda/std/type_traits>
#if CCCL_MAJOR_VERSION < 3 || (CCCL_MAJOR_VERSION == 3 && CCCL_MINOR_VERSION < 1)
#error this kernel needs CCCL 3.1 (CUDA 13.1) or newer
#endif
extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }
"""
CCCL_CASE = """title = "needs a newer CCCL"
[[variant]]
name = "nvrtc"
source = "k.cu"
frontend = "nvrtc"
flags = ["-std=c++17"]
libraries = ["cccl"]
only = { cccl = ">=13.0" }
"""
BROKEN = 'extern "C" __global__ void k(float* x) { x[0] = undefined_name; }\n'
BROKEN_CASE = """title = "does not compile"
[[variant]]
name = "nvrtc"
source = "k.cu"
frontend = "nvrtc"
"""


def _repros(markdown: str, project: Path) -> list[str]:
    """The repro commands, where the Markdown says they are run from `project`'s root."""
    root = re.search(r"Each repro command reruns its cell as this run ran it, from the "
                     r"project's root \(`([^`]+)`", markdown)
    assert root, markdown[-3000:]
    assert root.group(1) == project.name
    return re.findall(r"`(cudamatrix run [^`]+)`", markdown)


def _rerun(command: str, project: Path, env: dict[str, str], timeout: float
           ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """The command run in a shell at the project's root, and the results.json it wrote in
    the folder it names (its own, never the run's)."""
    done = subprocess.run(command, shell=True, cwd=project, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    words = shlex.split(command)
    out = words[words.index("--out") + 1]
    assert out.startswith("reports/repro/"), command
    assert (project / out / "results.json").is_file(), (done.stdout[-2000:], done.stderr[-2000:])
    return done, json.loads((project / out / "results.json").read_text())


def test_each_printed_repro_reruns_its_cell(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write_case(project / "cases", "cccl", CCCL_CASE, {"k.cu": NEEDS_CCCL_31})
    write_case(project / "cases", "broken", BROKEN_CASE, {"k.cu": BROKEN})
    # Run from the project's folder with a relative --corpus, as a user types it.
    run = cudamatrix("run", "--corpus", "cases", "--toolkit", "13.0", "--arch", "sm_80",
                     "--no-gpu", out=tmp_path / "out", cwd=project)
    assert run.code == 1, run.output[-3000:]
    cells = run.cells()
    unexpected = {cid for cid, c in cells.items() if c["outcome"] == "fail"}
    assert unexpected == {"broken/nvrtc/13.0/sm_80", "cccl/nvrtc/13.0/sm_80/cccl-13.0.85"}, \
        {cid: c["outcome"] for cid, c in cells.items()}
    commands = _repros((tmp_path / "out" / "COMPATIBILITY.md").read_text(), project)
    assert len(commands) == 2, commands
    # A shell in that folder, with nothing of the first run's environment that chose for it
    # (no CUDAMATRIX_PROVIDER): the command itself must carry what decided the cell.
    env = {k: v for k, v in os.environ.items() if k != "CUDAMATRIX_PROVIDER"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for command in commands:
        assert "--provider wheels" in command and "--corpus cases" in command, command
        assert "--no-compile-cache" in command, command
        done, results = _rerun(command, project, env, 900)
        assert done.returncode == 1, (command, done.stdout[-2000:], done.stderr[-2000:])
        again = results["cells"]
        assert len(again) == 1, (command, [c["id"] for c in again])
        first = cells[again[0]["id"]]
        for key in ("outcome", "stage", "message"):
            assert again[0][key] == first[key], (command, key, again[0][key], first[key])


NVCC_CASE = """title = "nvcc, one good and one broken"
[[variant]]
name = "good"
source = "good.cu"
frontend = "nvcc"
[[variant]]
name = "broken"
source = "broken.cu"
frontend = "nvcc"
"""
GOOD = "__global__ void add(float* x) { x[threadIdx.x] += 1.0f; }\n"


def test_a_cells_compile_runs_again_outside_the_tool(tmp_path: Path) -> None:
    """`cudamatrix repro ID`: the compile's logged commands as a script (nvcc by its path,
    reading its own nvcc.profile; NVRTC through the driver the tool ships, with the
    toolkit's libraries on LD_LIBRARY_PATH), which a plain shell runs to the same end."""
    cases = tmp_path / "cases"
    write_case(cases, "nv", NVCC_CASE, {"good.cu": GOOD, "broken.cu": BROKEN})
    write_case(cases, "broken", BROKEN_CASE, {"k.cu": BROKEN})
    out = tmp_path / "out"
    run = cudamatrix("run", "--corpus", str(cases), "--case", "nv", "--case", "broken",
                     "--toolkit", "13.0", "--toolkit", "12.4", "--arch", "sm_80", "--no-gpu",
                     out=out)
    cells = run.cells()
    assert len(cells) == 6, sorted(cells)
    for cell_id, cell in cells.items():
        script = cudamatrix("repro", cell_id, "--out", str(out))
        assert script.code == 0, script.output
        assert "{toolkit_root}" not in script.output
        done = subprocess.run(["sh", "-c", script.output], capture_output=True, text=True,
                              timeout=300, check=False, env={"PATH": "/usr/bin:/bin"})
        said = done.stdout + done.stderr
        if cell["outcome"] == "pass":
            assert done.returncode == 0, (cell_id, script.output, said[-2000:])
        else:
            assert done.returncode != 0, (cell_id, said[-2000:])
            assert "undefined_name" in said, (cell_id, said[-2000:])
    refused = cudamatrix("repro", "no/such/13.0/sm_80", "--out", str(out))
    assert refused.code == 2 and "no cell 'no/such/13.0/sm_80'" in refused.output


NAMED_CASE = """title = "NVRTC given the kernel's C++ name"
[[variant]]
name = "named"
source = "k.cu"
frontend = "nvrtc"
kernel = "add"
flags = ["-std=c++17"]
"""


def test_the_repro_of_a_together_compiled_cell_and_of_a_named_nvrtc_kernel_run_as_printed(
        tmp_path: Path) -> None:
    """Issue 48: the repro of a cell compiled with its sibling archs wrote into the group's
    folder, which the run had removed (`nvcc fatal : Could not open output file
    .../dependencies.d`); the logged NVRTC line of a cell with a kernel name stopped at
    `unrecognized arguments: -- -std=c++17`; and a run still going (no results.json yet)
    had no repro. Each runs as printed, from cells/ alone, to the same end."""
    cases = tmp_path / "cases"
    write_case(cases, "nv", NVCC_CASE, {"good.cu": GOOD, "broken.cu": BROKEN})
    write_case(cases, "named", NAMED_CASE, {"k.cu": GOOD})
    out = tmp_path / "out"
    run = cudamatrix("run", "--corpus", str(cases), "--case", "nv", "--case", "named",
                     "--toolkit", "13.0", "--arch", "sm_80", "--arch", "sm_90", "--no-gpu",
                     out=out)
    cells = run.cells()
    together = cells["nv/good/13.0/sm_80"]["stages"][0]
    assert together["details"].get("built_with") == ["sm_80", "sm_90"], together["details"]
    (out / "results.json").unlink()  # as while the run is still going: cells/ alone
    for cell_id in ("nv/good/13.0/sm_80", "nv/broken/13.0/sm_90", "named/named/13.0/sm_80"):
        script = cudamatrix("repro", cell_id, "--out", str(out))
        assert script.code == 0, script.output
        done = subprocess.run(["sh", "-c", script.output], capture_output=True, text=True,
                              timeout=300, check=False, env={"PATH": "/usr/bin:/bin"})
        said = done.stdout + done.stderr
        if cells[cell_id]["outcome"] == "pass":
            assert done.returncode == 0, (cell_id, script.output, said[-2000:])
        else:
            assert done.returncode != 0 and "undefined_name" in said, (cell_id, said[-2000:])
        if cell_id.startswith("named/"):
            assert "add -> " in said, said[-2000:]


@pytest.mark.docker
def test_a_container_runs_repro_reruns_in_its_container(tmp_path: Path) -> None:
    """A docker run's repro names the provider it ran with: pasted into a shell where
    `--provider auto` would choose otherwise, it reruns the cell in its container."""
    docker = pytest.importorskip("docker")
    try:
        docker.from_env().ping()
    except Exception as exc:  # any failure means no engine here
        pytest.skip(f"no Docker engine answers ({type(exc).__name__}); .ci/run starts one")
    project = tmp_path / "project"
    write_case(project / "cases", "broken", BROKEN_CASE, {"k.cu": BROKEN})
    run = cudamatrix("run", "--corpus", "cases", "--toolkit", "13.0", "--arch", "sm_80",
                     "--no-gpu", "--provider", "docker", out=tmp_path / "out", cwd=project,
                     timeout=1800)
    assert run.code == 1, run.output[-3000:]
    (command,) = _repros((tmp_path / "out" / "COMPATIBILITY.md").read_text(), project)
    assert "--provider docker" in command, command
    env = {k: v for k, v in os.environ.items() if k != "CUDAMATRIX_PROVIDER"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done, again = _rerun(command, project, env, 1800)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert again["run"]["provider"] == "docker"
    (cell,) = again["cells"]
    first = run.cells()[cell["id"]]
    assert (cell["outcome"], cell["stage"], cell["message"]) == \
        (first["outcome"], first["stage"], first["message"])
