"""Environments prepared ahead of their cells, and groups taken up as they are ready
(orchestrator/prefetch.py, issue 72): a download never holds a compile's place."""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Sequence
from pathlib import Path

import pytest

from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.defaults import DEFAULT_MATRIX
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.plan import Cell
from cudamatrix.errors import Failure
from cudamatrix.orchestrator.environments import Environments
from cudamatrix.orchestrator.prefetch import EnvironmentPrefetch, GroupQueue
from cudamatrix.providers.toolkits import (
    CellSite,
    ExecutorChoice,
    ProviderSetting,
    toolkit_providers,
)
from cudamatrix.stages.cell.environment import Environment

WAIT_S = 10.0


class Quiet:
    def note(self, text: str) -> None:
        pass


class SlowFirstToolkits:
    """A provider whose 12.4 takes until its 13.0 has been prepared (a long download
    beside a short one)."""

    name, local, unwatched = "slow-first", True, ""
    prepared_13 = threading.Event()

    def __init__(self, setting: ProviderSetting) -> None:
        self.cache = setting.cache

    def toolkit(self, version: str) -> Environment:
        if version == "12.4" and not self.prepared_13.wait(WAIT_S):
            raise AssertionError("13.0 was never prepared while 12.4 was")
        if version == "13.0":
            self.prepared_13.set()
        return Environment(toolkit=version, provider="slow-first", root=str(self.cache),
                           cuobjdump=str(self.cache / "cuobjdump"))

    def executor(self, site: CellSite) -> ExecutorChoice:
        return ExecutorChoice("local")

    def host_compiler(self, name: str) -> tuple[str, str] | Failure:
        return Failure(f"no {name}")


def test_one_toolkits_preparation_holds_up_no_other(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """One lock for every environment held each cell of a ready toolkit, and every other
    toolkit's preparation, behind the one being downloaded: here 12.4 cannot finish
    before 13.0 is prepared beside it."""
    SlowFirstToolkits.prepared_13 = threading.Event()
    monkeypatch.setitem(toolkit_providers(), "slow-first", SlowFirstToolkits)
    envs = Environments(load_matrix(DEFAULT_MATRIX), "slow-first", tmp_path, Quiet(),
                        ledger=InputLedger())
    got: dict[str, object] = {}
    slow = threading.Thread(target=lambda: got.update(slow=envs.toolkit("12.4")))
    slow.start()
    time.sleep(0.2)  # 12.4 is being prepared
    quick = threading.Thread(target=lambda: got.update(quick=envs.toolkit("13.0")))
    quick.start()
    quick.join(WAIT_S)
    slow.join(WAIT_S)
    assert not quick.is_alive() and not slow.is_alive()
    assert isinstance(got["quick"], Environment) and isinstance(got["slow"], Environment)
    # Each prepared once: asked again, the same environment without a second preparation.
    assert envs.toolkit("12.4") is got["slow"]


def _cell(toolkit: str, arch: str = "sm_80") -> Cell:
    return Cell("case", "v", toolkit, arch, "nvrtc")


def _take_in_thread(queue: GroupQueue) -> tuple[threading.Thread, list[Sequence[Cell]]]:
    taken: list[Sequence[Cell]] = []
    thread = threading.Thread(target=lambda: taken.append(queue.take()), daemon=True)
    thread.start()
    return thread, taken


def test_the_head_is_waited_for_by_one_worker_and_passed_over_by_the_others() -> None:
    long, quick, other = [_cell("12.4")], [_cell("13.0")], [_cell("13.0", "sm_90")]
    ready = {id(long): False, id(quick): True, id(other): True}
    changed = threading.Condition()
    cost = {id(long): 100.0, id(quick): 1.0, id(other): 1.0}
    queue = GroupQueue([long, quick, other], lambda g: ready[id(g)], changed,
                       cost=lambda g: cost[id(g)], workers=2)
    first, first_took = _take_in_thread(queue)
    time.sleep(0.2)
    assert first.is_alive()  # it waits for the head rather than taking a later group
    assert queue.take() is quick  # a second worker passes the head over: ready first
    with changed:
        ready[id(long)] = True
        changed.notify_all()
    first.join(WAIT_S)
    assert first_took == [long]
    assert queue.take() is other


def test_a_head_that_cannot_end_the_run_leaves_no_worker_idle() -> None:
    """The first `nox -s matrix` on 2 cores: one worker runs the longest cell, the next
    head (CUDA 13.0's, 77 s) waits for its download, and 12.4's short cells are ready. The
    head ends within the pending work's share per worker even after a short cell, so the
    free worker runs the short cells rather than waiting 12 s beside an idle core."""
    head, short = [_cell("13.0")], [_cell("12.4")]
    rest = [[_cell("12.4", f"sm_{n}")] for n in range(2)]
    ready = {id(head): False, id(short): True, **{id(g): False for g in rest}}
    cost = {id(head): 77.0, id(short): 2.0, **{id(g): 120.0 for g in rest}}
    changed = threading.Condition()
    queue = GroupQueue([head, short, *rest], lambda g: ready[id(g)], changed,
                       cost=lambda g: cost[id(g)], workers=2)
    worker, took = _take_in_thread(queue)
    worker.join(WAIT_S)
    assert took == [short]  # not left waiting for the head
    # The head grown to most of what is left: the same worker waits for it.
    cost[id(head)] = 400.0
    queue = GroupQueue([head, short, *rest], lambda g: ready[id(g)], changed,
                       cost=lambda g: cost[id(g)], workers=2)
    worker, took = _take_in_thread(queue)
    time.sleep(0.3)
    assert worker.is_alive() and not took
    with changed:
        ready[id(head)] = True
        changed.notify_all()
    worker.join(WAIT_S)
    assert took == [head]


def test_the_pending_share_shrinks_as_groups_are_taken() -> None:
    """What is left to run is what the share is of: after a short group is taken, the
    head (75 s) plus another (20 s) no longer fits in the pending work's share per worker
    (180 s over 2), so the next worker waits for the head rather than delaying it more."""
    head, a, b, rest = [_cell("13.0")], [_cell("12.4")], [_cell("12.4", "sm_90")], \
        [_cell("11.8")]
    cost = {id(head): 75.0, id(a): 20.0, id(b): 20.0, id(rest): 85.0}
    ready = {id(head): False, id(a): True, id(b): True, id(rest): False}
    changed = threading.Condition()
    queue = GroupQueue([head, a, b, rest], lambda g: ready[id(g)], changed,
                       cost=lambda g: cost[id(g)], workers=2)
    first, took_first = _take_in_thread(queue)
    first.join(WAIT_S)
    assert took_first == [a]  # 75 + 20 within 200 / 2
    second, took_second = _take_in_thread(queue)
    time.sleep(0.3)
    assert second.is_alive() and not took_second  # 75 + 20 above 180 / 2
    with changed:
        ready[id(head)] = True
        changed.notify_all()
    second.join(WAIT_S)
    assert took_second == [head]


def test_a_ready_head_goes_first_and_nothing_ready_waits_for_the_next() -> None:
    head, later = [_cell("12.4")], [_cell("11.8")]
    ready = {id(head): False, id(later): False}
    changed = threading.Condition()
    queue = GroupQueue([head, later], lambda g: ready[id(g)], changed,
                       cost=lambda g: 100.0 if g is head else 1.0, workers=2)
    waiting_head, took_head = _take_in_thread(queue)
    time.sleep(0.1)
    waiting_any, took_any = _take_in_thread(queue)
    time.sleep(0.2)
    assert waiting_head.is_alive() and waiting_any.is_alive()  # nothing ready: both wait
    with changed:
        ready[id(later)] = True
        changed.notify_all()
    waiting_any.join(WAIT_S)
    assert took_any == [later] and waiting_head.is_alive()
    with changed:
        ready[id(head)] = True
        changed.notify_all()
    waiting_head.join(WAIT_S)
    assert took_head == [head]
    # All ready: the schedule's order.
    a, b = [_cell("13.0")], [_cell("12.4")]
    in_order = GroupQueue([a, b], lambda g: True, threading.Condition(), cost=lambda g: 1.0,
                          workers=2)
    assert in_order.take() is a and in_order.take() is b


def test_each_need_prepared_once_in_the_schedules_order() -> None:
    cells = [[_cell("12.4")], [_cell("13.0")], [_cell("12.4", "sm_90")], [_cell("bundled")]]
    prepared: list[object] = []
    changed = threading.Condition()
    gate = threading.Event()

    def prepare(cell: Cell, need: Hashable) -> None:
        gate.wait(WAIT_S)
        prepared.append(need)

    def needs(cell: Cell) -> tuple[Hashable, ...]:
        # A toolkit and a library, prepared side by side; none for a bundled cell.
        return () if cell.toolkit == "bundled" else (cell.toolkit, f"lib-{cell.toolkit}")

    prefetch = EnvironmentPrefetch(cells, needs, prepare, changed, workers=1)
    assert not prefetch.ready(cells[0]) and not prefetch.ready(cells[2])
    assert prefetch.ready(cells[3])  # nothing to prepare for it
    gate.set()
    deadline = time.monotonic() + WAIT_S
    while not all(prefetch.ready(g) for g in cells) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert prepared == ["12.4", "lib-12.4", "13.0", "lib-13.0"]
    prefetch.close()


def test_a_group_is_ready_when_all_its_needs_are() -> None:
    cells = [[_cell("12.4")]]
    release = {"toolkit": threading.Event(), "library": threading.Event()}

    def prepare(cell: Cell, need: Hashable) -> None:
        release[str(need)].wait(WAIT_S)

    prefetch = EnvironmentPrefetch(cells, lambda c: ("toolkit", "library"), prepare,
                                   threading.Condition())
    release["toolkit"].set()
    time.sleep(0.3)
    assert not prefetch.ready(cells[0])  # its library is still being prepared
    release["library"].set()
    deadline = time.monotonic() + WAIT_S
    while not prefetch.ready(cells[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert prefetch.ready(cells[0])
    prefetch.close()


def test_a_preparation_that_raises_leaves_the_group_ready_for_its_cell_to_say_why() -> None:
    cells = [[_cell("12.4")]]

    def prepare(cell: Cell, need: Hashable) -> None:
        raise RuntimeError("boom")

    prefetch = EnvironmentPrefetch(cells, lambda c: (c.toolkit,), prepare,
                                   threading.Condition())
    deadline = time.monotonic() + WAIT_S
    while not prefetch.ready(cells[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert prefetch.ready(cells[0])
    prefetch.close()


def test_debians_nvcc_is_fetched_beside_the_wheels_install(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A wheels toolkit whose matrix entry names a Debian suite (12.4: its wheels carry no
    nvcc) fetches Debian's nvcc while its wheels install, not after: here each waits to
    see the other started, which a sequence of the two never does."""
    from cudamatrix.providers import toolkits

    wheels_started, debian_started = threading.Event(), threading.Event()

    def wheels(matrix: object, version: str, cache: Path, ledger: InputLedger) -> Environment:
        wheels_started.set()
        assert debian_started.wait(WAIT_S), "Debian's nvcc waited for the wheels"
        return Environment(toolkit=version, provider="wheels", root=str(cache))

    def unpack(suite: str, version: str, cache: Path, ledger: InputLedger) -> None:
        debian_started.set()
        assert wheels_started.wait(WAIT_S), "the wheels waited for Debian's nvcc"
        raise toolkits.EnvironmentUnavailable("no route to deb.debian.org")

    monkeypatch.setattr(toolkits, "prepare_toolkit", wheels)
    monkeypatch.setattr(toolkits, "unpack_debian_nvcc", unpack)
    refetched: list[str] = []
    monkeypatch.setattr(toolkits, "prepare_debian_nvcc",
                        lambda *args: refetched.append("again"))
    provider = toolkits.WheelsToolkits(load_matrix(DEFAULT_MATRIX), tmp_path, Quiet(),
                                       InputLedger())
    env = provider.toolkit("12.4")
    # The fetch's failure is the toolkit's reason, said once, not fetched a second time.
    assert env.nvcc is None and not refetched
    assert env.nvcc_unusable is not None and "no route to deb.debian.org" in env.nvcc_unusable
    assert "trixie" in env.nvcc_unusable


def test_a_cell_that_compiles_only_through_a_driver_asks_no_library_without_one(
        tmp_path: Path) -> None:
    """CuPy compiles through the driver: on a machine without one its cells are skipped
    before their library is asked for, so the prefetch neither installs CuPy for them nor
    holds them until it is installed; with a GPU, the library is prepared ahead."""
    from cudamatrix.config.options import RunOptions
    from cudamatrix.orchestrator.cell_jobs import CellJobs
    from cudamatrix.orchestrator.cupy_warmup import JitifyWarmups
    from cudamatrix.orchestrator.gpu import DeviceInfo

    options = RunOptions(corpus=(), toolkits=("13.0",), archs=("sm_90",), provider="wheels",
                         cache=tmp_path / "cache", out=tmp_path / "out", gpu=False,
                         compile_cache_from=())
    envs = Environments(load_matrix(options.matrix), "wheels", options.cache, Quiet(),
                        ledger=InputLedger())
    warmups = JitifyWarmups(options.cache, options.out, 1.0, lambda job: [], print)
    cupy = Cell("smem", "cupy-static", "13.0", "sm_90", "cupy", "cupy", "14.2.0")
    cutlass = Cell("gemm", "v", "13.0", "sm_90", "cutlass", "cutlass", "4.2.0")
    library = ("library", "cupy", "14.2.0", "13")

    def needs(device: DeviceInfo, cell: Cell) -> tuple[tuple[str, ...], ...]:
        return CellJobs(options, envs, device, warmups, None, lambda s: s
                        ).environment_needs(cell)

    none = DeviceInfo(reason="no NVIDIA driver on this machine")
    assert needs(none, cupy) == (("toolkit", "13.0"),)
    assert needs(none, cutlass) == (("toolkit", "13.0"), ("library", "cutlass", "4.2.0",
                                                          "None"))
    h100 = DeviceInfo(name="NVIDIA H100", arch="sm_90", driver="580.159")
    assert needs(h100, cupy) == (("toolkit", "13.0"), library)
