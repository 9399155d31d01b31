"""The commands of the command line, one module each (its arguments and its handler,
exported as a `command.Command`), found by entry point (``table.commands()``): ``init``,
``run``, ``bisect`` (its search: ``bisection``), ``validate``, ``list`` (``list_cells``),
``report``, ``repro``, ``plan`` (the GitHub Actions matrix: ``actions_matrix``),
``merge``, ``audit`` (``audit/``). Shared by several: ``arguments``, ``selection``,
``publishing``, ``progress_bar``.

May import every package below it; only ``cudamatrix.cli`` imports it.
"""
