"""Where a cell's worker runs: a process of its own here, or a `docker exec` in its
toolkit's container. Either way the worker writes its stages to the cell's folder and
the run reads them back, so a crash, a hang or an interrupted run costs one cell.

The run holds one `Executor`, made here from the kind its toolkit provider asks for
(providers/toolkits.py's ExecutorChoice): the runner never asks which kind it has, and a
provider never imports an executor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ...stages.cell.job import Job
from ...stages.cell.result import StageResult


class Executor(Protocol):
    """Runs cell workers: one job at a time per call, many calls at once from the run's
    threads."""

    def run(self, job: Job) -> list[StageResult]:
        """The job's stages, as its worker recorded them; a worker that crashed, was
        killed or ran past the job's limit gives one stage saying so. Raises
        KeyboardInterrupt once `stop` was called."""
        ...

    def stop(self) -> None:
        """The run is interrupted: end the running cells (their compilers with them) and
        refuse new ones."""
        ...

    def close(self) -> None:
        """The run is over: release servers, containers and folders."""
        ...


def _local(options: Mapping[str, Any]) -> Executor:
    from .local import LocalExecutor

    say = options.get("say")
    return LocalExecutor(gpu_server=bool(options.get("gpu_server")),
                         jit_cache=options.get("jit_cache"), jobs=int(options.get("jobs", 1)),
                         **({"say": say} if say is not None else {}))


def _containers(options: Mapping[str, Any]) -> Executor:
    from .containers import ContainerExecutor

    settings = dict(options)
    return ContainerExecutor(settings.pop("client"), **settings)


# Every executor by the kind a provider names: adding one is a module and a line here.
EXECUTORS: dict[str, Callable[[Mapping[str, Any]], Executor]] = {
    "local": _local,
    "containers": _containers,
}


def make_executor(kind: str, options: Mapping[str, Any]) -> Executor:
    """The executor of `kind`, made with `options`."""
    return EXECUTORS[kind](options)
