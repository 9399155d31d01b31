"""The GPUs of a machine and which cell goes where (executors/gpus.py), with the device list
faked: every GPU gets a server; a cell's GPU stages go to a GPU where its arch's SASS runs
natively when the machine has one, else to any; a GPU whose server will not start is said
once and left out; many cells at once spread over every GPU."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cudamatrix.config.corpus import timing_spec
from cudamatrix.orchestrator.executors.gpus import Gpu, GpuPool, GpuServer
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult


class FakeServer(GpuServer):
    def __init__(self, gpu: Gpu, broken: bool = False, seconds: float = 0.0) -> None:
        self.gpu, self.broken, self.seconds = gpu, broken, seconds
        self.ran: list[str] = []

    def run(self, job: Job, ptx: Path | None, cubin: Path | None) -> list[StageResult]:
        if self.broken:
            raise RuntimeError("its server did not start: CUDA_ERROR_DEVICE_UNAVAILABLE")
        time.sleep(self.seconds)
        self.ran.append(job.cell_id)
        return [StageResult("load", "ok", "", "", details={"gpu": self.gpu.to_dict()})]

    def stop(self) -> None:
        pass


def _pool(*servers: FakeServer, said: list[str] | None = None) -> GpuPool:
    pool = GpuPool([], Path("/nonexistent"), {}, (said if said is not None else []).append)
    pool.servers = list(servers)
    pool.free = list(servers)
    return pool


def _job(cell: str, arch: str) -> Job:
    return Job(cell_id=cell, arch=arch, source="k.cu", frontend="nvrtc", workdir="/w",
               timeout=10)


H100 = Gpu(0, "GPU-h100", "NVIDIA H100", "sm_90")
A100 = Gpu(1, "GPU-a100", "NVIDIA A100", "sm_80")


def test_a_cell_goes_where_its_arch_runs_natively() -> None:
    hopper, ampere = FakeServer(H100), FakeServer(A100)
    pool = _pool(hopper, ampere)
    pool.run(_job("a", "sm_90a"), None, None)
    pool.run(_job("b", "sm_86"), None, None)  # runs natively on neither: any GPU
    pool.run(_job("c", "sm_80"), None, None)  # sm_80 SASS runs on both: the first free
    assert "a" in hopper.ran and "a" not in ampere.ran


def test_a_native_gpu_that_is_busy_is_waited_for() -> None:
    hopper, ampere = FakeServer(H100, seconds=0.3), FakeServer(A100)
    pool = _pool(hopper, ampere)
    first = threading.Thread(target=pool.run, args=(_job("a", "sm_90"), None, None))
    first.start()
    time.sleep(0.05)
    pool.run(_job("b", "sm_90a"), None, None)  # the A100 is free, but cannot run sm_90a
    first.join()
    assert hopper.ran == ["a", "b"] and ampere.ran == []


def test_a_gpu_whose_server_will_not_start_is_said_once_and_left_out() -> None:
    said: list[str] = []
    broken, good = FakeServer(Gpu(0, "GPU-x", "busy GPU", "sm_80"), broken=True), \
        FakeServer(Gpu(1, "GPU-y", "good GPU", "sm_80"))
    pool = _pool(broken, good, said=said)
    for cell in "abc":
        pool.run(_job(cell, "sm_80"), None, None)
    assert good.ran == ["a", "b", "c"]
    assert len(said) == 1 and "GPU 0 (busy GPU, GPU-x) left out" in said[0]
    assert pool.servers == [good]


def test_with_no_gpu_left_the_cell_is_told() -> None:
    pool = _pool(FakeServer(H100, broken=True))
    with pytest.raises(RuntimeError, match="no GPU of this machine could start a server"):
        pool.run(_job("a", "sm_90"), None, None)


def test_many_cells_at_once_spread_over_every_gpu() -> None:
    gpus = [FakeServer(Gpu(i, f"GPU-{i}", "H100", "sm_90"), seconds=0.05) for i in range(8)]
    pool = _pool(*gpus)
    threads = [threading.Thread(target=pool.run, args=(_job(f"c{i}", "sm_90"), None, None))
               for i in range(32)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(g.ran for g in gpus) and sum(len(g.ran) for g in gpus) == 32  # every GPU
    assert time.monotonic() - started < 32 * 0.05  # at once, not one after another


class SilentServer(GpuServer):
    """A real server process on the real socket that takes the request and then either dies
    without an answer or never answers: what a crashed or hung GPU server does."""

    def __init__(self, gpu: Gpu, folder: Path, behaviour: str) -> None:
        super().__init__(gpu, folder, {})
        self.behaviour = behaviour

    def ensure(self) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        after = "os._exit(3)" if self.behaviour == "dies" else "time.sleep(60)"
        if self.behaviour == "refuses":  # says it is ready, then is gone before a cell asks
            script = "print('{\"ready\": true}', flush=True)\n"
            self.process = subprocess.Popen([sys.executable, "-c", script],
                                             stdout=subprocess.PIPE, text=True,
                                             start_new_session=True)
            assert self.process.stdout is not None
            self.process.stdout.readline()
            return
        script = ("import os, socket, sys, time\n"
                  "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                  f"s.bind({self.socket_path!r}); s.listen(1)\n"
                  "print('{\"ready\": true}', flush=True)\n"
                  "c, _ = s.accept(); c.recv(1 << 16)\n" + after + "\n")
        self.process = subprocess.Popen([sys.executable, "-c", script],
                                         stdout=subprocess.PIPE, text=True,
                                         start_new_session=True)
        assert self.process.stdout is not None
        self.process.stdout.readline()


@pytest.mark.parametrize("behaviour", ["dies", "hangs", "refuses"])
def test_a_cell_whose_server_died_or_hung_names_the_gpu_it_was_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str) -> None:
    """Which of the runner's GPUs a kernel hung or crashed on is the first thing its owner
    asks; the cell's first stage names it, as an answered cell's does. A server gone before
    the cell reached it is that cell's crash, not a failure to write the run's record (it
    was an OSError the run took for a full disk, and stopped)."""
    import cudamatrix.orchestrator.executors.gpus as gpus
    monkeypatch.setattr(gpus, "SERVER_GRACE_S", 0.0)
    work = tmp_path / "cell"
    work.mkdir()
    server = SilentServer(A100, tmp_path, behaviour)
    job = Job(cell_id="c", arch="sm_80", source="k.cu", frontend="nvrtc",
              workdir=str(work), timeout=1)
    try:
        stages = server.run(job, None, None)
    finally:
        server.stop()
    assert stages[0].status == ("timeout" if behaviour == "hangs" else "crashed"), stages
    assert stages[0].details["gpu"] == A100.to_dict()
    assert stages[0].details["server_replaced"]


def test_no_cell_of_its_own_process_does_gpu_work_beside_a_timed_cell() -> None:
    """Issue 47: a cell kept in its own process (CuPy, a host entry, a build's test) ran
    GPU work while the server timed another cell on that GPU, its launches timed as the
    timed kernel's. A timed cell waits until no such cell holds its GPU, and none starts
    there while it is timed; an untimed cell shares the GPU with them."""
    server = FakeServer(H100, seconds=0.3)
    pool = _pool(server)
    events: list[str] = []
    timed = Job(cell_id="timed", arch="sm_90", source="k.cu", frontend="nvrtc", workdir="/w",
                timeout=10, time=timing_spec({"l2": "cold"}))

    def own_process(name: str, seconds: float) -> None:
        with pool.lent("sm_90") as gpu:
            assert gpu == H100
            events.append(f"{name} starts")
            time.sleep(seconds)
            events.append(f"{name} ends")

    first = threading.Thread(target=own_process, args=("cupy", 0.6))
    first.start()
    time.sleep(0.05)
    timer = threading.Thread(target=lambda: (pool.run(timed, None, None),
                                             events.append("timed ends")))
    timer.start()
    time.sleep(0.05)
    second = threading.Thread(target=own_process, args=("build-test", 0.01))
    time.sleep(0.05)
    second.start()
    for thread in (first, timer, second):
        thread.join()
    assert events.index("cupy ends") < events.index("timed ends")
    assert events.index("build-test starts") > events.index("timed ends"), events
    # An untimed cell runs beside one that holds the GPU.
    with pool.lent("sm_90"):
        started = time.monotonic()
        pool.run(_job("untimed", "sm_90"), None, None)
        assert time.monotonic() - started < 1.0
