"""What the user declares: the matrix (``matrix``, ``data/matrix.toml`` its default), the
project file (``project``), the cases and what a case may say (``corpus``,
``case_tables``), where their sources come from (``sources``), a run's options
(``options``, ``defaults``), the cells all of that expands to (``plan``, ``planning``) and
the CI's GPU runners they are sent to (``runners``).
``data/`` holds the default matrix, the known-bug corpus, the CI templates and the
container recipes.

May import: ``stages`` (the frontends' registry and the check kinds a case names),
``common``, ``errors``.
"""
