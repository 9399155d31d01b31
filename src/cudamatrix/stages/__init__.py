"""Stages a cell goes through: compile -> inspect -> load -> run.

Each stage returns a `StageResult`; the first one that does not succeed stops
the cell. Stages run inside a cell worker process (see `worker`), never in the
orchestrating process, so a crashing compiler or kernel costs one cell only.
"""
