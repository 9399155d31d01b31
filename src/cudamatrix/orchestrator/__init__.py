"""One run: the cells planned, each toolkit's environment prepared once (``environments``),
each cell's job made (``cell_jobs``, ``job_preparation``) and handed to an executor
(``executors/``: a process here, a container, a GPU's server), the compile cache, CuPy's
one-time Jitify warm-up, the GPU probe, progress, and the record written
(``runner``).

May import: ``record``, ``providers``, ``config``, ``stages``, ``common``, ``errors``; never
``reports`` or ``commands``.
"""
