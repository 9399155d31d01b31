"""What each command of the command line does, from its parsed arguments (``dispatch``):
``run``, ``report``, ``merge``, ``plan`` (the GitHub Actions matrix: ``actions_matrix``),
``bisect`` (``bisect``), ``audit`` (``audit/``), ``init``, ``list``, ``repro``.

May import every package below it; only ``cudamatrix.cli`` imports it.
"""
