"""The environments the schedule will need, prepared ahead of the cells, and the groups of
cells handed to the workers as their environments become ready (issue 72).

A first run fetches and unpacks each toolkit's wheels and each library's (CUTLASS's torch
headers alone took 31 to 40 s) while the cores should be compiling. Prepared inside a
worker, a download held a compile's place: on 2 cores the first `nox -s matrix` was 1.32x
its compile floor, its cells' own seconds 1.20x. Here a small pool of its own prepares
each environment in the order the schedule first needs it, and a worker takes the first
group in the schedule's order whose environments are ready; only the head of the
schedule (the longest work left) is waited for by one worker rather than passed over, so
the longest cell still starts first and the others fill the cores meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from ..common.interruption import interrupted
from ..config.plan import Cell

# Downloads and unpacks side by side: the network's and the disk's work, not the cores'.
PREFETCH_WORKERS = 2


class EnvironmentPrefetch:
    """Each distinct environment the schedule needs (`needs_of` a group's first cell: its
    toolkit, its library), prepared once by `prepare` on a pool of its own, in the order
    the schedule first needs it; a toolkit and a library side by side (a library built
    from source waits for its toolkit there). A failure is the environment's to keep
    (Environments keeps it as its reason); an exception here leaves the cell to ask again
    and say it."""

    def __init__(self, groups: Sequence[Sequence[Cell]],
                 needs_of: Callable[[Cell], Sequence[Hashable]],
                 prepare: Callable[[Cell, Hashable], None], changed: threading.Condition,
                 workers: int = PREFETCH_WORKERS) -> None:
        self._needs_of, self._changed = needs_of, changed
        self._done: dict[Hashable, Future[None]] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers,
                                        thread_name_prefix="cudamatrix-prefetch")
        for group in groups:
            for need in needs_of(group[0]) if group else ():
                if need in self._done:
                    continue
                future = self._pool.submit(self._prepare, prepare, group[0], need)
                future.add_done_callback(self._said)
                self._done[need] = future

    @staticmethod
    def _prepare(prepare: Callable[[Cell, Hashable], None], cell: Cell, need: Hashable
                 ) -> None:
        if interrupted():  # the run stops: nothing more is fetched for it
            return
        try:
            prepare(cell, need)
        except Exception:  # the cell asks again and says what went wrong
            return

    def _said(self, _: Future[None]) -> None:
        with self._changed:
            self._changed.notify_all()

    def ready(self, group: Sequence[Cell]) -> bool:
        """Whether the group's environments are prepared (or failed, or were never asked
        ahead of it): its worker will not wait for a download."""
        return all(self._done[need].done() for need in (self._needs_of(group[0]) if group
                                                         else ()) if need in self._done)

    def close(self) -> None:
        """Stop what has not started (an interrupted run); what runs finishes on its own."""
        self._pool.shutdown(wait=False, cancel_futures=True)


class GroupQueue:
    """The schedule's groups, handed out in its order but ready first: a worker takes the
    first group whose environments are ready; with nothing ready, it waits for the next
    environment.

    The head of the schedule, not ready, is waited for by one worker (so it starts the
    moment it can) and passed over by the others, but only while it could end the run:
    while its cost and a ready group's exceed the pending work's share per worker. A head
    that fits in that share leaves no worker idle for it: on 2 cores, one worker ran the
    longest cell while the other waited 12 s for CUDA 13.0's download with CUDA 12.4's
    short cells ready (the first `nox -s matrix`, issue 72)."""

    def __init__(self, groups: Sequence[Sequence[Cell]], ready: Callable[[Sequence[Cell]], bool],
                 changed: threading.Condition, *, cost: Callable[[Sequence[Cell]], float],
                 workers: int) -> None:
        self._pending = list(groups)
        self._ready, self._changed = ready, changed
        self._cost, self._workers = cost, max(1, workers)
        self._pending_cost = sum(cost(g) for g in self._pending)
        self._head_awaited = False

    def take(self) -> Sequence[Cell]:
        """The next group for a worker (the run makes one call per group, so one is left
        for each call)."""
        with self._changed:
            awaited: Sequence[Cell] | None = None  # the head this worker waits for
            try:
                while True:
                    if interrupted():  # the run stops: no worker takes another group
                        raise KeyboardInterrupt
                    head = self._pending[0]
                    if self._ready(head):
                        return self._pop(0)
                    if awaited is not None and awaited is not head:
                        awaited, self._head_awaited = None, False  # taken: a new head
                    if not self._head_awaited:
                        awaited, self._head_awaited = head, True
                    chosen = next((i for i, g in enumerate(self._pending)
                                   if i and self._ready(g)), None)
                    if chosen is not None and (awaited is None or self._may_pass(
                            head, self._pending[chosen])):
                        return self._pop(chosen)
                    self._changed.wait(timeout=1.0)
            finally:
                if awaited is not None:
                    self._head_awaited = False

    def waiting(self) -> int:
        """How many groups no worker has taken yet."""
        return len(self._pending)

    def _may_pass(self, head: Sequence[Cell], group: Sequence[Cell]) -> bool:
        """Whether the head still ends within the pending work's share per worker when
        `group` runs before it: then waiting for it would only leave a core idle."""
        return self._cost(head) + self._cost(group) <= self._pending_cost / self._workers

    def _pop(self, index: int) -> Sequence[Cell]:
        group = self._pending.pop(index)
        self._pending_cost -= self._cost(group)
        return group
