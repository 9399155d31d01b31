"""The GPUs of a machine and which cell goes where (executors/gpus.py), with the device list
faked: every GPU gets a server; a cell's GPU stages go to a GPU where its arch's SASS runs
natively when the machine has one, else to any; a GPU whose server will not start is said
once and left out; many cells at once spread over every GPU."""

from __future__ import annotations

import contextlib
import json
import os
import signal
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
    def __init__(self, gpu: Gpu, broken: bool = False, seconds: float = 0.0,
                 free_bytes: int | None = None, events: list[str] | None = None) -> None:
        self.gpu, self.broken, self.seconds = gpu, broken, seconds
        self.free_bytes, self.started = free_bytes, 1
        self.ran: list[str] = []
        self.events = events if events is not None else []

    def ensure(self) -> None:
        if self.broken:
            raise RuntimeError("its server did not start: CUDA_ERROR_DEVICE_UNAVAILABLE")

    def run(self, job: Job, ptx: Path | None, cubin: Path | None) -> list[StageResult]:
        self.ensure()
        self.events.append(f"{job.cell_id} starts")
        time.sleep(self.seconds)
        self.events.append(f"{job.cell_id} ends")
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
    # Nothing does GPU work beside it: the build's test, come while it waited, ran first.
    assert events.index("build-test ends") < events.index("timed ends"), events
    with pool.lent("sm_90"):  # while a cell of its own process holds the GPU, a timed
        waiting = threading.Thread(target=pool.run, args=(timed, None, None))  # one waits
        waiting.start()
        time.sleep(0.1)
        assert waiting.is_alive()
    waiting.join()
    # An untimed cell runs beside one that holds the GPU.
    with pool.lent("sm_90"):
        started = time.monotonic()
        pool.run(_job("untimed", "sm_90"), None, None)
        assert time.monotonic() - started < 1.0


# --- several servers per GPU (issue 81) -------------------------------------------------------

GIB = 1 << 30


class SlotPool(GpuPool):
    """A pool whose GPUs' further servers are fakes like its first."""

    def __init__(self, first: FakeServer, width: int) -> None:
        super().__init__([], Path("/nonexistent"), {}, width=width)
        self.servers, self.free = [first], [first]
        self.made = 1
        self.first = first

    def new_server(self, gpu: Gpu, slot: int) -> GpuServer:
        return FakeServer(gpu, seconds=self.first.seconds, free_bytes=self.first.free_bytes,
                          events=self.first.events)


def _at_once(pool: GpuPool, jobs: list[Job]) -> float:
    threads = [threading.Thread(target=pool.run, args=(job, None, None)) for job in jobs]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started


def test_n_servers_of_one_gpu_run_n_jit_loads_side_by_side() -> None:
    """A cold run's 54 PTX-JIT loads went one at a time through the GPU's one server while
    15 cores waited (issue 81): a GPU is given more servers while cells wait for it, up to
    the run's width, and their loads run at once."""
    events: list[str] = []
    pool = SlotPool(FakeServer(H100, seconds=0.4, free_bytes=80 * GIB, events=events), width=4)
    _at_once(pool, [_job(f"jit{i}", "sm_80") for i in range(4)])
    # Side by side: every load started before any ended (one at a time, each would end
    # before the next starts).
    assert max(events.index(f"jit{i} starts") for i in range(4)) \
        < min(events.index(f"jit{i} ends") for i in range(4)), events
    assert len(pool.servers) == 4
    # A fifth cell reuses a server that is free: no fifth process.
    pool.run(_job("warm", "sm_80"), None, None)
    assert len(pool.servers) == 4


def _timed_job(cell: str = "timed") -> Job:
    return Job(cell_id=cell, arch="sm_90", source="k.cu", frontend="nvrtc", workdir="/w",
               timeout=10, time=timing_spec({"l2": "cold"}))


def _alone(events: list[str], cell: str) -> None:
    """Nothing started or ended between `cell`'s start and its end."""
    assert events.index(f"{cell} ends") == events.index(f"{cell} starts") + 1, events


def test_a_timed_cell_waits_holding_nothing_and_runs_with_its_gpu_to_itself() -> None:
    """A timing shares the GPU with no other cell, but waiting for that stops no one: a
    timed cell that asked while a hang ran held the GPU from then on, and a cold run's 16
    workers waited out the hang's 20 s limit behind it (issue 81). Cells that come while
    it waits start beside the running ones; it runs once the GPU is idle, alone; a cell
    that comes while it is timed waits until the timing is over."""
    events: list[str] = []
    pool = SlotPool(FakeServer(H100, seconds=0.3, free_bytes=80 * GIB, events=events), width=4)
    early = [threading.Thread(target=pool.run, args=(_job(f"early{i}", "sm_90"), None, None))
             for i in range(2)]
    for thread in early:
        thread.start()
    time.sleep(0.05)
    timer = threading.Thread(target=pool.run, args=(_timed_job(), None, None))
    timer.start()
    time.sleep(0.05)
    meanwhile = threading.Thread(target=pool.run, args=(_job("meanwhile", "sm_90"), None, None))
    meanwhile.start()
    meanwhile.join()
    for thread in early:
        thread.join()
    while "timed starts" not in events:
        time.sleep(0.01)
    during = threading.Thread(target=pool.run, args=(_job("during", "sm_90"), None, None))
    during.start()
    for thread in (timer, during):
        thread.join()
    at = events.index
    # The cell that came while the timed one waited started at once, beside the early ones.
    assert at("meanwhile starts") < min(at(f"early{i} ends") for i in range(2)), events
    assert at("timed starts") > max(at(f"early{i} ends") for i in range(2)), events
    assert at("timed starts") > at("meanwhile ends"), events
    _alone(events, "timed")
    assert at("during starts") > at("timed ends"), events


def test_two_timed_cells_each_have_the_gpu_alone() -> None:
    events: list[str] = []
    pool = SlotPool(FakeServer(H100, seconds=0.2, free_bytes=80 * GIB, events=events), width=4)
    _at_once(pool, [_timed_job("t1"), _timed_job("t2"), _job("u1", "sm_90"),
                    _job("u2", "sm_80")])
    _alone(events, "t1")
    _alone(events, "t2")


def test_a_cells_wait_for_a_server_is_said_and_left_out_of_its_recorded_cost() -> None:
    """A cell's seconds count the wait for its GPU's server; its recorded cost must not:
    the timed cells that waited out a hang were recorded at 25 s and started first in the
    next run, to wait again."""
    events: list[str] = []
    pool = SlotPool(FakeServer(H100, seconds=0.3, free_bytes=80 * GIB, events=events), width=1)
    said: dict[str, list[StageResult]] = {}

    def run(job: Job) -> None:
        said[job.cell_id] = pool.run(job, None, None)

    first = threading.Thread(target=run, args=(_job("first", "sm_90"),))
    first.start()
    time.sleep(0.05)
    run(_job("second", "sm_90"))
    first.join()
    assert "gpu_wait_s" not in said["first"][0].details
    assert 0.15 < said["second"][0].details["gpu_wait_s"] < 1.0


def test_a_gpu_whose_server_cannot_read_its_own_memory_keeps_one_server() -> None:
    """A server tells memory gone missing by what its own process holds (NVML); where it
    cannot read that (no nvidia-ml-py, a container's own process ids), only the GPU's free
    memory is left, which a second server's context and cells would take: servers were
    replaced for nothing. Such a GPU keeps its one server, its loads one at a time."""
    events: list[str] = []
    first = FakeServer(H100, seconds=0.2, free_bytes=80 * GIB, events=events)
    first.said_ready({"ready": True, "held_bytes": -1})
    assert first.own_memory is False
    pool = SlotPool(first, width=4)
    _at_once(pool, [_job(f"c{i}", "sm_80") for i in range(4)])
    assert len(pool.servers) == 1
    assert all(events.index(f"c{i} ends") == events.index(f"c{i} starts") + 1
               for i in range(4)), events  # each ended before the next started
    reads = FakeServer(H100, free_bytes=80 * GIB)
    reads.said_ready({"ready": True, "held_bytes": 300 << 20})
    assert reads.own_memory is True


def test_a_gpus_servers_are_bounded_by_the_cores_and_its_memory() -> None:
    """A server's JIT is a core's work and its context takes GPU memory: a GPU gets no
    more servers than the run's width (its cells at once, the cores) shared by the GPUs,
    nor more than its free memory holds beside a margin; one until its memory is known."""
    from cudamatrix.orchestrator.executors.gpus import slots_per_gpu

    assert slots_per_gpu(16, 1, 80 * GIB) == 16
    assert slots_per_gpu(16, 2, 80 * GIB) == 8
    assert slots_per_gpu(16, 1, 4 * GIB) == 3  # 3 GiB of 4 for contexts, 1 kept
    assert slots_per_gpu(16, 1, GIB // 2) == 1  # never none
    assert slots_per_gpu(16, 1, None) == 1
    assert slots_per_gpu(1, 1, 80 * GIB) == 1
    by_cores = SlotPool(FakeServer(H100, seconds=0.2, free_bytes=80 * GIB), width=2)
    _at_once(by_cores, [_job(f"c{i}", "sm_80") for i in range(6)])
    assert len(by_cores.servers) == 2
    by_memory = SlotPool(FakeServer(H100, seconds=0.2, free_bytes=2 * GIB), width=16)
    _at_once(by_memory, [_job(f"c{i}", "sm_80") for i in range(6)])
    assert len(by_memory.servers) == 1


def test_the_cores_are_those_the_process_may_run_on() -> None:
    """A CI runner pinned to 2 cores of 64 gives its GPU's servers 2 cores, not 64."""
    script = ("import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
              "from cudamatrix.orchestrator.executors.gpus import usable_cores; "
              "print(usable_cores())")
    said = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert said.stdout.strip() == "1"


def test_a_server_that_will_not_start_beside_others_caps_its_gpu_not_drops_it() -> None:
    """A GPU's second server that will not start (no memory left for its context) leaves
    the GPU with the servers it has; it is left out only where it has none."""
    said: list[str] = []
    first = FakeServer(H100, seconds=0.3, free_bytes=80 * GIB)

    class Refusing(SlotPool):
        def new_server(self, gpu: Gpu, slot: int) -> GpuServer:
            return FakeServer(gpu, broken=True)

    pool = Refusing(first, width=4)
    pool.say = said.append
    _at_once(pool, [_job(f"c{i}", "sm_90") for i in range(3)])
    assert sorted(first.ran) == ["c0", "c1", "c2"] and said == []
    assert pool.servers == [first] and pool.slots(H100) == 1


def _answering_server_script(socket_path: str) -> str:
    """A server process on the real socket: ready with its GPU's free memory, then for each
    cell an answer after 0.3 s, except a cell named crash*, at which it dies unanswered
    (what a kernel that kills its server does)."""
    answer = json.dumps({"stages": [StageResult("load", "ok", "").to_dict()], "ended": ""})
    return ("import os, socket, time\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            f"s.bind({socket_path!r}); s.listen(4)\n"
            f"print('{{\"ready\": true, \"free_bytes\": {80 * GIB}}}', flush=True)\n"
            "while True:\n"
            "    c, _ = s.accept(); data = c.recv(1 << 16)\n"
            "    if b'kill-me' in data: os._exit(3)\n"
            "    time.sleep(0.3)\n"
            f"    c.sendall({answer!r}.encode() + b'\\n'); c.close()\n")


class ScriptServer(GpuServer):
    """A server whose process is the script above, started by GpuServer's own `ensure`
    (the rule of when a server is started again is the code under test)."""

    def command(self) -> list[str]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        return [sys.executable, "-c", _answering_server_script(self.socket_path)]


class ScriptPool(GpuPool):
    def new_server(self, gpu: Gpu, slot: int) -> GpuServer:
        return ScriptServer(gpu, self.folder, {}, None, slot)


def test_a_server_that_crashed_is_started_again_and_the_gpus_others_go_on(
        tmp_path: Path) -> None:
    """A cell that kills its server costs that cell and that server: the GPU's other server
    keeps its process and its cell, and the crashed one is started afresh for the next."""
    pool = ScriptPool([], tmp_path, {}, width=2)
    first = ScriptServer(H100, tmp_path, {})
    pool.servers, pool.free, pool.made = [first], [first], 1
    results: dict[str, list[StageResult]] = {}

    def cell(name: str) -> None:
        work = tmp_path / name
        work.mkdir()
        job = Job(cell_id=name, arch="sm_90", source="k.cu", frontend="nvrtc",
                  workdir=str(work), timeout=10)
        results[name] = pool.run(job, None, None)

    try:
        threads = [threading.Thread(target=cell, args=(name,)) for name in ("ok", "kill-me")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(pool.servers) == 2
        crashed = next(s for s in pool.servers if s.process is None)
        survivor = next(s for s in pool.servers if s is not crashed)
        assert survivor.process is not None
        pid = survivor.process.pid
        threads = [threading.Thread(target=cell, args=(name,)) for name in ("next1", "next2")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        pool.close()
    assert results["kill-me"][0].status == "crashed", results["kill-me"]
    assert "exited with status 3" in results["kill-me"][0].message
    assert [results[n][0].status for n in ("ok", "next1", "next2")] == ["ok"] * 3
    assert crashed.started == 2 and survivor.started == 1  # only the crashed one restarted
    assert survivor.process is None or survivor.process.pid == pid


def test_a_server_that_died_between_cells_is_started_again_before_the_next(
        tmp_path: Path) -> None:
    """A server process gone while idle (the kernel's OOM killer, a GPU reset, a person's
    kill) is started again as the next cell asks for it: that cell is not charged with a
    crash it had no part in."""
    server = ScriptServer(H100, tmp_path, {})
    pool = _pool()
    pool.servers, pool.free = [server], [server]

    def cell(name: str) -> list[StageResult]:
        work = tmp_path / name
        work.mkdir()
        return pool.run(Job(cell_id=name, arch="sm_90", source="k.cu", frontend="nvrtc",
                            workdir=str(work), timeout=10), None, None)

    try:
        assert cell("first")[0].status == "ok"
        assert server.process is not None
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait()
        after = cell("after")
    finally:
        pool.close()
    assert after[0].status == "ok", after
    assert server.started == 2
