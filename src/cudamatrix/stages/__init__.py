"""Stages a cell goes through: compile -> inspect -> load -> run.

Each stage returns a `StageResult`; the first one that does not succeed stops
the cell. Stages run inside a cell worker process (see `worker`), never in the
orchestrating process, so a crashing compiler or kernel costs one cell only. What a
stage needs of a prepared toolkit is an `environment.Environment`; what a built file holds
is read by `binaries/`; the frontends register themselves in `frontends/`.

May import: ``common``, ``errors``, nothing of the run's side (``config``, ``record``,
``providers``, ``orchestrator``, ``reports``, ``commands``): a cell's worker process imports
only this package.
"""
