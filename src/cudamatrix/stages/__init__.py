"""Stages a cell goes through: compile -> inspect -> load -> run.

Each stage returns a `StageResult`; the first one that does not succeed stops
the cell. Stages run inside a cell worker process (see `runtime.worker`), never in the
orchestrating process, so a crashing compiler or kernel costs one cell only. Grouped by
stage, each group's docstring saying what it holds and may import:

- ``cell/``: the job, the environment it sees, a stage's record, its folder's file names;
- ``compile/``: what every frontend's compile shares (flags, includes, NVRTC, logs);
- ``inspect/``: the inspect stage, artifact checks, budgets, kernel names;
- ``device/``: load and run on a GPU, its server, timing, the reference check;
- ``runtime/``: the worker, the fork server, a GPU's server: the processes the stages run in;
- ``process/``: bounded tool runs, hangs, what a process is told (below every stage);
- ``frontends/``: the registry and one module per frontend;
- ``binaries/``: what a built file holds, read without running it.

May import: ``common``, ``errors``, nothing of the run's side (``config``, ``record``,
``providers``, ``orchestrator``, ``reports``, ``commands``): a cell's worker process imports
only this package.
"""
