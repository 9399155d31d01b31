"""The docker provider on a real engine (.ci/run installs Debian's docker.io and starts it):
toolkit images built locally, cells run inside them locked down, the same verdicts as the
wheels provider, and a GPU request on a machine without the NVIDIA runtime cleaned up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import Run, main_job_cache

docker = pytest.importorskip("docker")

from cudamatrix.errors import EnvironmentUnavailable  # noqa: E402
from cudamatrix.orchestrator.executors.containers import CellContainer, leftover_containers  # noqa: E402
from cudamatrix.providers.docker import BASE_TAG, ensure_base_image  # noqa: E402


def _engine():
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # any failure means no engine here
        return None, f"no Docker engine answers ({type(exc).__name__}); .ci/run starts one"
    return client, ""


CLIENT, WHY = _engine()
pytestmark = [pytest.mark.docker, pytest.mark.skipif(CLIENT is None, reason=WHY)]

SANDBOX_CHECK = r'''
import json, os, socket, sys
found = {"uid": os.getuid()}
found["interfaces"] = sorted(os.listdir("/sys/class/net"))
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    found["network"] = "reachable"
except OSError as exc:
    found["network"] = f"unreachable ({exc.strerror or exc})"
def writable(path):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        os.unlink(path)
        return True
    except OSError:
        return False
here = os.path.dirname(os.path.abspath(__file__))
found["corpus_writable"] = writable(os.path.join(here, "probe"))
found["root_fs_writable"] = writable("/etc/cudamatrix-probe")
found["workdir_writable"] = writable(os.path.join(os.environ["CUDAMATRIX_WORKDIR"], "probe"))
for limit in ("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"):
    if os.path.exists(limit):
        found["pids_max"] = open(limit).read().strip()
print(json.dumps(found))
ok = (found["uid"] != 0 and found["interfaces"] == ["lo"] and not found["corpus_writable"]
      and not found["root_fs_writable"] and found["workdir_writable"]
      and found.get("pids_max") == "1024")
sys.exit(0 if ok else f"not sandboxed: {found}")
'''


def _sandbox_case(root: Path) -> Path:
    case = root / "sandbox"
    case.mkdir(parents=True)
    (case / "check.py").write_text(SANDBOX_CHECK)
    (case / "case.toml").write_text(
        'title = "where cells run"\n[[variant]]\nname = "inside"\nsource = "check.py"\n'
        'frontend = "cute-dsl"\nonly = { arch = "sm_90a" }\n')
    return root


def _container_ids() -> set[str]:
    return {c.id for c in leftover_containers(CLIENT)}


def test_cells_run_locked_down_inside_the_container(run_cli, tmp_path: Path) -> None:
    before = _container_ids()
    corpus = _sandbox_case(tmp_path / "cases")
    args = ("run", "--corpus", str(corpus), "--case", "sandbox", "--no-compile-cache")
    inside = run_cli(*args, "--provider", "docker", out=tmp_path / "docker", timeout=1800)
    cell = inside.cells()["sandbox/inside/bundled/sm_90a/cute_dsl-4.8.1"]
    assert cell["outcome"] == "pass", inside.output[-3000:]
    report = cell["stages"][0]["details"]["report"]
    assert report["uid"] > 10001 and report["interfaces"] == ["lo"]  # a cell's own uid
    assert report["network"].startswith("unreachable")
    # The same check outside a container fails: it tells the two apart.
    outside = run_cli(*args, "--provider", "wheels", out=tmp_path / "wheels")
    assert outside.cells()["sandbox/inside/bundled/sm_90a/cute_dsl-4.8.1"]["outcome"] == "fail"
    assert _container_ids() <= before  # the run removed its container


def _verdicts(run) -> dict[str, tuple[str, str, str | None]]:
    return {i: (c["outcome"], c["stage"], (c["diagnosis"] or {}).get("rule"))
            for i, c in run.cells().items()}


# Cells of the selection below that showed nothing the others do not, at a minute or more
# of CUTLASS each in a container: the same builds for another arch or toolkit, and the
# older emitted extension (its compile error is the 12.4 sm_90a build's, cut short).
# CUTLASS keeps one cell a toolkit: 12.4's Hopper GEMM built by Debian's nvcc in the image
# (pass) and 13.0's arch guard refusing plain sm_90 (xfail at compile). 13.0's unguarded
# sm_90 build (72 s in the container) was an artifact check deciding in there, which
# test_sass_checks_run_inside_containers holds.
SAME_AS_ANOTHER = {
    "cutlass-sm90/arch-guarded/12.4/sm_90/cutlass-4.2.0",
    "cutlass-sm90/arch-guarded/12.4/sm_90a/cutlass-4.2.0",
    "cutlass-sm90/arch-guarded/13.0/sm_90a/cutlass-4.2.0",
    "cutlass-sm90/unguarded/12.4/sm_90/cutlass-4.2.0",
    "cutlass-sm90/unguarded/13.0/sm_90/cutlass-4.2.0",
    "cutlass-sm90/unguarded/13.0/sm_90a/cutlass-4.2.0",
    "cutlass-sm90/emit-pytorch-build/12.4/sm_90a/cutlass_torch-3.4.1",
}


def test_same_verdicts_from_wheels_and_docker(run_cli, tmp_path: Path, main_job: Run) -> None:
    before = _container_ids()
    selection = ("--case", "marlin-sm75", "--case", "smem-oversize", "--case", "wmma-jitify",
                 "--case", "cutlass-sm90", "--toolkit", "12.4", "--toolkit", "13.0",
                 "--arch", "sm_80", "--arch", "sm_90", "--arch", "sm_90a")
    listed = run_cli("list", *selection).output.split()
    assert set(listed) >= SAME_AS_ANOTHER
    args = ["run", *(word for cell in listed if cell not in SAME_AS_ANOTHER
                     for word in ("--cell", cell))]
    # The wheels side reads the main job's compiles and builds (the same cells, never
    # written there); every cell compiles afresh in its container.
    wheels = run_cli(*args, "--provider", "wheels", "--compile-cache-from",
                     str(main_job_cache(main_job)), out=tmp_path / "wheels")
    docker_run = run_cli(*args, "--provider", "docker", "--no-compile-cache",
                         out=tmp_path / "docker", timeout=3000)
    assert docker_run.code == wheels.code == 0, docker_run.output[-3000:]
    assert docker_run.results["run"]["provider"] == "docker"
    # Debian's nvcc serves 12.4 in both: here unpacked, there inside the image.
    for run in (wheels, docker_run):
        assert run.results["run"]["toolkits"]["12.4"]["tool_versions"]["nvcc_from"] \
            .startswith("nvidia-cuda-toolkit 12.4.131")
    assert _verdicts(docker_run) == _verdicts(wheels)
    assert any(c["toolkit"] == "12.4" and c["frontend"] in ("nvcc", "cutlass")
               and c["outcome"] == "pass" for c in docker_run.cells().values())
    built = [c for c in docker_run.cells().values() if c["stage"] != "compile"
             or c["outcome"] == "pass"]
    assert built  # cells really compiled in there: their jobs name paths inside the image
    job = json.loads(next((tmp_path / "docker" / "artifacts").glob("*13.0*/job.json"))
                     .read_text())
    assert job["source"].startswith("/work/corpus/") and job["env"]["image"]
    assert _container_ids() <= before


def test_gpu_request_without_nvidia_runtime_is_cleaned_up() -> None:
    ensure_base_image(CLIENT)
    run_id = "gpu-probe-test"
    with pytest.raises(EnvironmentUnavailable) as failure:
        CellContainer(CLIENT, BASE_TAG, [], run_id, gpu=True)
    assert "did not start" in str(failure.value)
    assert "could not select device driver" in str(failure.value)
    assert leftover_containers(CLIENT, run_id) == []


def test_missing_engine_is_a_clear_error(run_cli, tmp_path: Path) -> None:
    run = run_cli("run", "--provider", "docker", "--case", "marlin-sm75", out=tmp_path / "out",
                  env={"DOCKER_HOST": f"unix://{tmp_path}/no-such.sock"})
    assert run.code == 2
    assert "--provider docker: no Docker engine answers" in run.output


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_interrupted_container_run_resumes(run_cli, tmp_path: Path, how: str) -> None:
    """Ctrl-C removes the run's containers at once; a SIGKILLed run's containers are found
    and removed by the next run. Either way --resume finishes with the same verdicts."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import REPO

    selection = ["run", "--case", "marlin-sm75", "--case", "smem-oversize", "--toolkit", "12.4",
                 "--arch", "sm_80", "--arch", "sm_90a"]
    args = [*selection, "--jobs", "1", "--provider", "docker", "--no-compile-cache"]
    process = subprocess.Popen([sys.executable, "-m", "cudamatrix", *args, "--out",
                                str(tmp_path / "out")], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "CI": "1"})
    deadline = time.monotonic() + 600
    while len(list((tmp_path / "out" / "cells").glob("*.json"))) < 3:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    process.send_signal(getattr(signal, how))
    output, _ = process.communicate(timeout=300)
    run_label = f"{process.pid}-"
    mine = [c for c in leftover_containers(CLIENT)
            if str(c.labels.get("org.cudamatrix.run", "")).startswith(run_label)]
    if how == "SIGINT":
        assert process.returncode == 130, output
        assert mine == []
    else:
        assert mine, "a SIGKILLed run cannot remove its own container"
    kept = len(list((tmp_path / "out" / "cells").glob("*.json")))
    resumed = run_cli(*args, "--resume", out=tmp_path / "out", timeout=1800)
    assert resumed.code == 0, resumed.output[-3000:]
    assert f"resuming: {kept} of" in resumed.output
    assert [c for c in leftover_containers(CLIENT)
            if str(c.labels.get("org.cudamatrix.run", "")).startswith(run_label)] == []
    wheels = run_cli(*selection, "--provider", "wheels", out=tmp_path / "wheels")
    assert _verdicts(resumed) == _verdicts(wheels)


def test_a_cell_cannot_signal_another_in_the_same_container(run_cli, tmp_path: Path) -> None:
    """Issue 11, point 5: cells of one toolkit share a container; each runs as a uid of its
    own, so a case that kills every process it may signal ends only itself."""
    corpus = tmp_path / "cases"
    scripts = {
        "victim": "import time\ntime.sleep(10)\nprint('{}')\n",
        "killer": "import os, signal, time\ntime.sleep(3)\nos.kill(-1, signal.SIGKILL)\n",
    }
    for name, script in scripts.items():
        (corpus / name).mkdir(parents=True)
        (corpus / name / "case.py").write_text(script)
        (corpus / name / "case.toml").write_text(
            f'title = "{name}"\n[[variant]]\nname = "v"\nsource = "case.py"\n'
            'frontend = "cute-dsl"\nonly = { arch = "sm_90a" }\n')
    run = run_cli("run", "--corpus", str(corpus), "--case", "victim", "--case", "killer",
                  "--no-compile-cache", "--provider", "docker", "--jobs", "2",
                  out=tmp_path / "out", timeout=900)
    cells = run.cells()
    victim = cells["victim/v/bundled/sm_90a/cute_dsl-4.8.1"]
    assert victim["outcome"] == "pass", (victim["message"], run.output[-3000:])
    assert cells["killer/v/bundled/sm_90a/cute_dsl-4.8.1"]["outcome"] != "pass"


def test_sass_checks_run_inside_containers(run_cli, tmp_path: Path) -> None:
    """The wheels images carry no cuobjdump: the run mounts the cache's 13.5 tools, so an
    `in = "sass"` check decides in a container as it does outside (it was a skip)."""
    case = tmp_path / "cases" / "fma"
    case.mkdir(parents=True)
    (case / "k.cu").write_text('extern "C" __global__ void k(float a, float* x) '
                               '{ x[threadIdx.x] = a * x[threadIdx.x] + 1.0f; }\n')
    (case / "case.toml").write_text(
        'title = "fma"\n[[variant]]\nname = "v"\nsource = "k.cu"\nfrontend = "nvrtc"\n'
        '  [[variant.artifact]]\n  in = "sass"\n  contains = "FFMA"\n')
    run = run_cli("run", "--corpus", str(tmp_path / "cases"), "--case", "fma", "--toolkit",
                  "13.0", "--arch", "sm_80", "--provider", "docker", "--no-compile-cache",
                  out=tmp_path / "out", timeout=900)
    cell = run.cells()["fma/v/13.0/sm_80"]
    assert cell["outcome"] == "pass", cell["message"]
    assert [s["status"] for s in cell["stages"][:2]] == ["ok", "ok"]


NVCC_KERNEL = 'extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n'


def test_debian_nvcc_builds_inside_the_wheels_images(run_cli, tmp_path: Path) -> None:
    """Issue 12, point 2's container half: the 11.8 and 12.4 images carry Debian's nvcc
    (their wheels have none), built with the base image's g++ 11 and 12 (nvcc 11.8
    refuses GCC 12); the cells compile in there and say which nvcc and GCC built them."""
    corpus = tmp_path / "cases" / "twice"
    corpus.mkdir(parents=True)
    (corpus / "k.cu").write_text(NVCC_KERNEL)
    (corpus / "case.toml").write_text(
        'title = "an nvcc kernel"\n[[variant]]\nname = "v"\nsource = "k.cu"\n'
        'frontend = "nvcc"\nkernel = "twice"\n')
    run = run_cli("run", "--corpus", str(tmp_path / "cases"), "--case", "twice", "--toolkit",
                  "11.8", "--toolkit", "12.4", "--arch", "sm_80", "--provider", "docker",
                  "--no-compile-cache",
                  out=tmp_path / "out", timeout=3000)
    assert run.code == 0, run.output[-3000:]
    for toolkit, nvcc, suite, gcc in (("11.8", "11.8.89", "bookworm", 11),
                                      ("12.4", "12.4.131", "trixie", 12)):
        cell = run.cells()[f"twice/v/{toolkit}/sm_80"]
        assert cell["outcome"] == "pass", cell["message"]
        assert cell["versions"]["nvcc"] == nvcc
        assert cell["versions"]["nvcc_from"].endswith(f"({suite})")
        assert cell["versions"]["host_compiler"] == f"g++-{gcc} (image)"
        job = json.loads(next((tmp_path / "out" / "artifacts").glob(f"twice*{toolkit}*/job.json"))
                         .read_text())
        assert job["env"]["nvcc"].startswith("/opt/cudamatrix/debian/")
        assert job["env"]["host_compiler"] == f"/usr/bin/g++-{gcc}"
        assert f"-ccbin /usr/bin/g++-{gcc}" in cell["stages"][0]["log"]


def test_a_named_gcc_runs_in_the_image_as_on_the_host(run_cli, tmp_path: Path) -> None:
    """The host-compiler axis in containers: the base image's g++-11 and g++-12 are the
    compilers a case may name there (nvcc 11.8's real refusal of GCC 12 included); a
    compiler the image lacks is a skip that says which it has."""
    args = ("run", "--known-bugs", "--case", "host-compiler-range", "--toolkit", "11.8",
            "--arch", "sm_80", "--no-compile-cache")
    docker_run = run_cli(*args, "--provider", "docker", out=tmp_path / "docker", timeout=1800)
    wheels = run_cli(*args, "--provider", "wheels", out=tmp_path / "wheels")
    inside, here = docker_run.cells(), wheels.cells()
    for variant in ("gcc-11", "gcc-12", "gcc-12-allowed"):
        cell = f"host-compiler-range/{variant}/11.8/sm_80"
        assert inside[cell]["outcome"] == here[cell]["outcome"], inside[cell]["message"]
        assert inside[cell]["versions"]["host_compiler"].endswith("(image)")
    assert inside["host-compiler-range/gcc-12/11.8/sm_80"]["outcome"] == "xfail"
    assert "unsupported GNU version" in inside["host-compiler-range/gcc-12/11.8/sm_80"]["message"]
    clang = inside["host-compiler-range/clang-19/11.8/sm_80"]
    assert clang["outcome"] == "skip"
    assert "the toolkit images carry g++-11, g++-12, not clang++-19" in clang["message"]
